"""Data selection (DataSense-Bench in miniature): pools, students, the env and its analyses."""
