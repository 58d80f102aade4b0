"""Declarative configuration: the YAML of `manage.py apply -f` and `export` (CONFIG.md),
its schema, field validation with paths, and the writes that apply it."""
