"""Step 5 of the request path, admission: budgets and rate limits (SPEC R-LIM-1, R-LIM-2).
The limits are pure arithmetic (limits.py) kept by one of two stores behind one protocol: in
process on the embedded default (limit_store.py), or in Redis, atomically across replicas
(redis_limits.py); gateway/request_path/admit.py calls them before the first attempt and
releases what it took on every exit path."""
