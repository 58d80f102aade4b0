"""Budgets and rate limits on Redis, the same on every replica: the Lua scripts and the
admitter's calls of them, the worker's own connection its admissions share (or a
cluster's), allowances, and the admitter that takes both in one round trip."""
