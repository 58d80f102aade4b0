"""Declarative configuration, applied: `manage.py apply -f` writes a parsed configuration
(declarative/) through the apps' models and services (`apply.py`), and `export` reads it
back (`export.py`)."""
