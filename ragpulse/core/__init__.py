"""What collector and scorer share: wire formats, the bus, sampling math, label bounds, serving."""
