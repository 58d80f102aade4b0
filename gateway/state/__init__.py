"""Request-path state: the per-process runtime (snapshot holder, live metrics, pins,
cooldowns, trace writer), the configuration snapshot, what replicas share through Redis,
and the one database thread. Only this package touches the runtime singletons."""
