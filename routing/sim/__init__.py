"""The routing simulator (`make simulate`, docs/simulation.md): a seeded, time-compressed
run of the real routing code — decide, order_targets, adaptive_order, live metrics,
cooldowns, session keeping — against synthetic providers with scripted faults, compared per
strategy. Pure like the rest of routing/: a simulated clock and seeded random sources only.

providers.py (synthetic behaviour) · scenarios.py (scripts) · state.py (the gateway's
per-process state and bookkeeping) · strategies.py (how the gateway composes the routing
code) · engine.py (the event loop) · report.py (numbers and table) · __main__.py (CLI).
"""
