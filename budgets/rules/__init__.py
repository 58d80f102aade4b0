"""The arithmetic of budgets, rate limits and allowances, and the values the stores pass:
pure (no Django, no I/O, no clock read; an import contract and `mypy --strict` hold it)."""
