"""Speed benchmarks: each prints medians over repeated runs and a ratio against a baseline measured in the same
run (`python -m evals.benchmarks.<name> --help`). Not tests."""
