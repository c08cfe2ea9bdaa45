"""Helpers of the oracle test runner (tests/run.py)."""
