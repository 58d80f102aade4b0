"""The pure routing engine: values in, decisions with reasons out. No Django, no I/O, no
clock (`now` is passed in); import-linter and mypy --strict keep it so in CI."""
