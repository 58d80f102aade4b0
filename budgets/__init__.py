"""Budgets and rate limits end to end (SPEC R-LIM-1, R-LIM-2, D-28): the tables and the
services that write them, and the runtime step 5 of the request path admits with — the
pure arithmetic (`rules/`), the stores in process and in the database (`stores/`), and
Redis (`redis/`); `create.py` picks a worker's stores."""
