"""Benchmarks: each module runs as ``python -m bench.<name>`` from the checkout (``--small`` for the
quick mode the test suite runs) and prints a table against a baseline measured in the same run."""
