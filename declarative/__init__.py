"""The declarative configuration's parsing and validation (CONFIG.md): the YAML of
`manage.py apply -f` read into typed specs (`types.py`), every problem collected with its
path (`fields.py`), per part (`workspaces.py`, `key_settings.py`, `budgets.py`,
`routes.py`) and whole (`schema.py`). Pure: no database, no Django; the writes that apply
a parsed configuration are management_api/config_apply.py's. Below the apps: the management API,
the console and presets validate with it; it imports only the routing engine and
workspaces' retention choices."""
