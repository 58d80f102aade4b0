"""Affinity (SPEC R-EXE-6, R-EXE-7): which session a request belongs to, session keeping,
and prompt-cache pinning."""
