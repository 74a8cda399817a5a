"""Calibration cases for benchmarks/analysis_calibration.py, one module per family."""
