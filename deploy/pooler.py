"""PgBouncer in transaction pooling mode in front of a PostgreSQL on 127.0.0.1, for
`make rollout-test ROLLOUT_ARGS=--pgbouncer` (docs/deployment.md, "PgBouncer").

Transaction pooling lends a server connection to a client for one transaction only, so
whatever outlives a transaction on a server connection breaks under it: server-side
cursors, prepared statements, session settings. Running the fleet through a real
PgBouncer is how the harness shows that Switchyard, with SWITCHYARD_DB_TRANSACTION_POOLING
set, keeps to that. Debian's `pgbouncer` package (`.ci/run` installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString
from urllib.parse import urlparse

import psycopg

from fakeupstream.process import free_port

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
# Client connections are cheap for PgBouncer (a socket each): the limit only has to hold
# every process of the fleet with room over (each gateway worker keeps one, each console
# or management request opens one while it runs). Server connections are what PostgreSQL
# pays for, default_pool_size of them per database and user at most; transactions here
# last milliseconds (batched inserts, indexed reads), so a few serve the whole fleet, and
# 10 stays well under PostgreSQL's max_connections (100 by default).
MAX_CLIENT_CONN, DEFAULT_POOL_SIZE = 500, 10


@contextlib.contextmanager
def pgbouncer(database_url: str, folder: Path) -> Iterator[str]:
    """PgBouncer on a free port of 127.0.0.1 in front of `database_url`'s server (trust
    authentication, user postgres) for as long as the block runs; yields the URL of the
    same database through it. Its config, log and pidfile go into `folder`/pgbouncer."""
    target = urlparse(database_url)
    port = free_port()
    home = folder / "pgbouncer"
    home.mkdir()
    # PgBouncer refuses to run as root; as root it runs as postgres (`-u`), which must
    # reach the folder (a TemporaryDirectory is 0700) and write its log and pidfile.
    folder.chmod(folder.stat().st_mode | 0o711)
    home.chmod(0o777)
    (home / "userlist.txt").write_text('"postgres" ""\n')
    config = home / "pgbouncer.ini"
    config.write_text(
        textwrap.dedent(f"""\
        [databases]
        * = host={target.hostname or "127.0.0.1"} port={target.port or 5432}
        [pgbouncer]
        listen_addr = 127.0.0.1
        listen_port = {port}
        unix_socket_dir =
        auth_type = trust
        auth_file = {home / "userlist.txt"}
        stats_users = postgres
        pool_mode = transaction
        max_client_conn = {MAX_CLIENT_CONN}
        default_pool_size = {DEFAULT_POOL_SIZE}
        logfile = {home / "pgbouncer.log"}
        pidfile = {home / "pgbouncer.pid"}
        """)
    )
    for path in (config, home / "userlist.txt"):
        path.chmod(0o644)
    as_postgres = ["-u", "postgres"] if os.geteuid() == 0 else []
    # Debian installs it in /usr/sbin, which is not on every user's PATH
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    process = subprocess.Popen(
        [binary, *as_postgres, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = target._replace(netloc=f"postgres@127.0.0.1:{port}").geturl()
    try:
        _until_accepting(url, process, home / "pgbouncer.log")
        yield url
    finally:
        process.terminate()  # SIGTERM: PgBouncer shuts down at once
        process.wait(timeout=STOP_TIMEOUT_S)


@dataclass(frozen=True, slots=True)
class Served:
    """What PgBouncer's console says of the database of `url` (SHOW STATS, SHOW POOLS)."""

    transactions: int  # passed on to the database since PgBouncer started
    clients: int  # connections to PgBouncer now
    servers: int  # its connections to PostgreSQL now

    @classmethod
    def now(cls, url: str) -> Served:
        stats, pools = _console(url, "SHOW STATS"), _console(url, "SHOW POOLS")
        return cls(
            sum(int(row["total_xact_count"]) for row in stats),
            sum(int(row["cl_active"]) + int(row["cl_waiting"]) for row in pools),
            sum(int(row[state]) for row in pools for state in SERVER_STATES),
        )


SERVER_STATES = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")


def _console(url: str, command: LiteralString) -> list[dict[str, Any]]:
    """`command`'s rows for the database of `url`, from PgBouncer's console."""
    console = urlparse(url)._replace(path="/pgbouncer").geturl()
    with psycopg.connect(console, autocommit=True) as db:
        cursor = db.execute(command)
        names = [column.name for column in cursor.description or ()]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return [row for row in rows if row["database"] == urlparse(url).path.lstrip("/")]


def _until_accepting(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"pgbouncer exited {process.returncode}:\n{tail}")
        try:
            with psycopg.connect(url, connect_timeout=1) as db:
                db.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)
