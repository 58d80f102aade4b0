"""Where budget counters and rate-limit leases live without Redis: in this process (the
embedded default) or in the database (PostgreSQL), and the spending ledger both rebuild from."""
