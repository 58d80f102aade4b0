"""What the fleet of the rolling-restart harness (deploy/rollout.py) asked of its stores:
Redis commands, PostgreSQL transactions and connections around the load (`Footprint`), and,
with `--pgbouncer`, what PgBouncer passed on and a `route replay` through it."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
import redis

from deploy.pooler import Served
from deploy.rollout_catalog import ROUTE, WORKSPACE
from gateway.processes import manage


@dataclass(frozen=True, slots=True)
class Footprint:
    """What the fleet asked of Redis and PostgreSQL: counters read before and after the
    load (their difference), and the connections open to the run's database at the end."""

    redis_commands: int  # the whole server's (Celery's included), or the cluster's masters'
    transactions: int  # committed in the run's database
    connections: int
    masters: tuple[int, ...] = ()  # on a cluster, each master's share of redis_commands

    @classmethod
    def now(cls, redis_url: str, database_url: str, cluster: bool = False) -> Footprint:
        if cluster:
            nodes = redis.RedisCluster.from_url(redis_url)
            stats = nodes.info("stats", target_nodes=redis.RedisCluster.PRIMARIES)
            masters = tuple(int(stats[n]["total_commands_processed"]) for n in sorted(stats))
            commands = sum(masters)
            nodes.close()
        else:
            client = redis.Redis.from_url(redis_url)
            commands, masters = int(client.info("stats")["total_commands_processed"]), ()
            client.close()
        with psycopg.connect(database_url, autocommit=True) as db:
            name = db.info.dbname
            commits = db.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
            ).fetchone()[0]
            held = db.execute(
                "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %s", (name,)
            ).fetchone()[0]  # (the - 1: not this connection)
        return cls(commands, int(commits), int(held), masters)

    def __sub__(self, before: Footprint) -> Footprint:
        masters = tuple(a - b for a, b in zip(self.masters, before.masters, strict=True))
        return Footprint(
            self.redis_commands - before.redis_commands,
            self.transactions - before.transactions,
            self.connections,
            masters,
        )


def through_pgbouncer(fleet: dict[str, str]) -> str:
    """What PgBouncer served, and a `route replay` over the run's traces through it
    (QuerySet.iterator(): a server-side cursor unless they are disabled)."""
    served = Served.now(fleet["DATABASE_URL"])
    replay = manage(
        "route",
        "replay",
        ROUTE,
        "--workspace",
        WORKSPACE,
        "--version",
        "2",
        "--since",
        "1h",
        env=fleet,
    ).splitlines()[0]
    return (
        f"PgBouncer passed {served.transactions} transactions to the database; at the "
        f"end {served.clients} client connections on {served.servers} server "
        f"connections\n  route replay through it: {replay}"
    )
