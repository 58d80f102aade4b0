"""The request path (ARCHITECTURE.md), one module per step, strung by `serve.serve`:

1. authenticate.py — the workspace key against the snapshot → `Caller`
2. parse.py        — the body, validated → `Parsed` (each operation's `parse`)
3. resolve.py      — tiers, model field, auto router, seed, session → `Resolved`
4. decide.py       — the model chain and each model's decision → `Plan`
5. admit.py        — budgets and rate limits (a seam until they are enforced)
6. execute.py      — the plan carried out with failover → `Outcome`
7. record.py       — trace, live observations, metrics, client headers

Every step receives the request's `RoutingState` (gateway/state/request_state.py) and
returns what it would change as effects; only serve.py applies them.
"""
