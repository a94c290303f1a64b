"""Results: case records, the run folder and its writers, reports, compare and merge."""
