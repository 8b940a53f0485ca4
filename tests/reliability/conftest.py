"""Reliability and security suites (issue 9): crash safety, concurrent builders, hostile input,
faulty models, secrets. Run them on their own with ``.venv/bin/python -m pytest tests/reliability``."""
