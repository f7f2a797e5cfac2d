"""Evaluation harness and benchmarks (not part of the test suite)."""
