"""Post-training algorithms."""
