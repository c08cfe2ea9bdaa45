"""The groups of tests the oracle test runner (tests/run.py) calls, and
their helpers."""
