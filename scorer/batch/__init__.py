"""`ragpulse score`: a batch file of rows scored offline, its statistics and its summary."""
