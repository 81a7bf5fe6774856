"""Quality beyond one record: the judge cascade, its prediction-powered estimates, budget pacing and drift."""
