"""Django settings, read once from the environment (django-environ).

Every variable has an embedded default that runs a single-machine demo: SQLite under
`var/`, no Redis, Celery tasks run in-process. The README's table lists each variable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import environ

from gateway.devsecrets import load_dev_secrets
from gateway.gateway_settings import GatewaySettings, parse_encryption_keys

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.FileAwareEnv()
environ.Env.read_env(BASE_DIR / ".env")

# Everything the gateway writes besides /tmp: the checkout's `var/`, or in the image its one
# declared volume (an installed wheel's BASE_DIR is site-packages, never written to).
VAR_DIR = Path(env.str("SWITCHYARD_DATA_DIR", default=str(BASE_DIR / "var")))

# Generated into VAR_DIR only while one of the three is not set, as on a fresh clone;
# production sets all three and nothing is written (docs/deployment.md).
_DEV_SECRETS = ("SECRET_KEY", "SWITCHYARD_ENCRYPTION_KEYS", "SWITCHYARD_KEY_PEPPER")
_dev = {} if all(env.str(name, default="") for name in _DEV_SECRETS) else load_dev_secrets(VAR_DIR)

SECRET_KEY = env.str("SECRET_KEY", default=_dev.get("SECRET_KEY", ""))
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_prometheus",
    "gateway",
    "workspaces",
    "routing",
    "presets",
    "budgets",
    "audit",
    "management_api",  # no models: its commands (apply, export, bootstrap, route)
    "console",
]

# Every middleware here is async-capable, so a /v1 request never hops to a thread.
MIDDLEWARE = [
    "gateway.middleware.request_id_middleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "console.csp.csp_middleware",
]

ROOT_URLCONF = "gateway.urls"
ASGI_APPLICATION = "gateway.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'switchyard.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the gateway's workers read while the trace writer writes.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
else:
    # Under ASGI each request of the full Django stack (the management API, the console)
    # runs its sync view in a thread of its own: a persistent connection would be left
    # open in every one of them ("too many clients" at a few hundred requests). So they
    # close at the end of the request; the API path keeps its one database thread's
    # connection open (gateway/state/db_thread.py). Put PgBouncer in front for many.
    DATABASES["default"].setdefault("CONN_MAX_AGE", 0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # A database that is away must fail a connect fast: the trace writer spools then.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 3)
    # Behind a pooler in transaction pooling mode (PgBouncer's pool_mode = transaction;
    # docs/deployment.md, "PgBouncer") consecutive transactions of one connection may run
    # on different server connections, so nothing may outlive a transaction on one: no
    # server-side cursors, which QuerySet.iterator() would hold open across transactions
    # (Django's databases docs, "Transaction pooling and server-side cursors"), and no
    # prepared statements (psycopg prepares a query after prepare_threshold runs; Django
    # passes OPTIONS to psycopg.connect and defaults it to None, this pins it).
    if env.bool("SWITCHYARD_DB_TRANSACTION_POOLING", default=False):
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Traces the database could not take wait here (audit/spool.py), one folder per database
# so a spool is never drained into another database than the one it was meant for.
_db = DATABASES["default"]
_db_where = f"{_db.get('HOST') or ''}:{_db.get('PORT') or ''}/{_db['NAME']}"
_db_id = f"{Path(str(_db['NAME'])).stem}-{hashlib.sha256(_db_where.encode()).hexdigest()[:12]}"
TRACE_SPOOL_DIR = Path(env.str("SWITCHYARD_TRACE_SPOOL_DIR", str(VAR_DIR / "trace-spool"))) / _db_id
TRACE_SPOOL_MB = env.int("SWITCHYARD_TRACE_SPOOL_MB", default=512)

REDIS_URL = env.str("REDIS_URL", default="")
# REDIS_URL names one node of a Redis Cluster: every store finds the others from it, and
# keys carry their workspace's hash tag (docs/deployment.md, "Redis Cluster").
REDIS_CLUSTER = env.bool("SWITCHYARD_REDIS_CLUSTER", default=False)
# Where budgets and rate limits are kept (budgets/create.py): auto picks Redis
# when REDIS_URL is set, else the database on PostgreSQL, else this process.
ADMISSION_STORE = env.str("SWITCHYARD_ADMISSION_STORE", default="auto")
# Requests a worker admits from one allowance far from every cap (Redis only; 0: none,
# every request admitted by Redis itself; docs/budgets.md "Allowances").
ALLOWANCE_REQUESTS = env.int("SWITCHYARD_ALLOWANCE_REQUESTS", default=64)
# How often each worker hands its live-metric slice in and reads the rollup back, and how
# often Celery beat rolls the slices up (R-OBS-2; routing/rollup.py).
LIVE_ROLLUP_S = env.float("SWITCHYARD_LIVE_ROLLUP_S", default=5.0)
# How often each worker charges budget reservations whose request never settled.
BUDGET_SWEEP_S = env.float("SWITCHYARD_BUDGET_SWEEP_S", default=10.0)
# Redis keys and channel of the state replicas share (gateway/state/shared_state.py); replicas
# that should share must use the same prefix, tests use one of their own.
SHARED_STATE_PREFIX = env.str("SWITCHYARD_SHARED_STATE_PREFIX", default="switchyard")
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL  # in-process when no broker
CELERY_TASK_EAGER_PROPAGATES = True

# The console (console/): Django's sign-in; its cookies only over HTTPS unless DEBUG, or
# SWITCHYARD_SECURE_COOKIES=false where it is served over plain HTTP on loopback (`make run`).
LOGIN_URL = "console:sign-in"
LOGIN_REDIRECT_URL = "console:home"
SECURE_COOKIES = env.bool("SWITCHYARD_SECURE_COOKIES", default=not DEBUG)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_COOKIES
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
# Behind a load balancer that terminates TLS (docs/deployment.md, "HTTPS"): the console's
# plain-HTTP requests are redirected to HTTPS, trusting X-Forwarded-Proto, which that load
# balancer must set and overwrite; browsers are told to keep to HTTPS for HSTS_SECONDS. The
# API paths and the probes never pass Django's security middleware (gateway/asgi.py), so a
# plain-HTTP probe is never redirected.
SECURE_SSL_REDIRECT = env.bool("SWITCHYARD_SSL_REDIRECT", default=False)
if SECURE_SSL_REDIRECT:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int("SWITCHYARD_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
# Asking browsers to preload the domain is a separate, hard-to-undo choice of the domain's
# owner (hstspreload.org), not a setting that a deploy check should push.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
SERVE_STATIC = env.bool("SWITCHYARD_SERVE_STATIC", default=True)

# drf-spectacular's deploy check builds a schema of the whole URLconf, where /v1 is not
# described by drf-spectacular (it has its own, /v1/openapi.json); the management API's
# schema is held by tests/workspaces/test_management_schema.py instead.
SPECTACULAR_SETTINGS = {"ENABLE_DJANGO_DEPLOY_CHECK": False}

REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "gateway.errors.drf_exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SWITCHYARD_ENCRYPTION_KEYS = parse_encryption_keys(
    env.str("SWITCHYARD_ENCRYPTION_KEYS", default=_dev.get("SWITCHYARD_ENCRYPTION_KEYS", ""))
)
SWITCHYARD_KEY_PEPPER = env.str(
    "SWITCHYARD_KEY_PEPPER", default=_dev.get("SWITCHYARD_KEY_PEPPER", "")
)

GATEWAY = GatewaySettings(
    max_body_bytes=env.int("SWITCHYARD_MAX_BODY_BYTES", default=4 * 1024 * 1024),
    max_attempts=env.int("SWITCHYARD_MAX_ATTEMPTS", default=3),
    connect_timeout_s=env.float("SWITCHYARD_CONNECT_TIMEOUT_S", default=3.0),
    ttfb_timeout_s=env.float("SWITCHYARD_TTFB_TIMEOUT_S", default=60.0),
    idle_timeout_s=env.float("SWITCHYARD_IDLE_TIMEOUT_S", default=60.0),
    total_timeout_s=env.float("SWITCHYARD_TOTAL_TIMEOUT_S", default=600.0),
    snapshot_poll_s=env.float("SWITCHYARD_SNAPSHOT_POLL_S", default=1.0),
    trace_flush_s=env.float("SWITCHYARD_TRACE_FLUSH_S", default=0.2),
    # A stream holds its upstream connection from the request to its end, so the pool caps
    # the streams one worker serves at once (256 did); its default follows the worker's
    # connection cap (gateway/processes.py WORKER_CONCURRENCY), so none waits for a slot.
    upstream_pool_size=env.int(
        "SWITCHYARD_UPSTREAM_POOL_SIZE", default=env.int("SWITCHYARD_WORKER_CONCURRENCY", 8192)
    ),
    health_window_s=env.float("SWITCHYARD_HEALTH_WINDOW_S", default=30.0),
    unhealthy_errors=env.int("SWITCHYARD_UNHEALTHY_ERRORS", default=3),
    cooldown_base_s=env.float("SWITCHYARD_COOLDOWN_BASE_S", default=30.0),
    cooldown_max_s=env.float("SWITCHYARD_COOLDOWN_MAX_S", default=300.0),
    session_affinity=env.bool("SWITCHYARD_SESSION_AFFINITY", default=True),
)
DATA_UPLOAD_MAX_MEMORY_SIZE = GATEWAY.max_body_bytes
# How often the rollout guard judges each guarded route (SPEC D-26); unset, each route's
# own `rollout_guard.interval_s` (default 30). For tests and demos.
ROLLOUT_GUARD_INTERVAL_S = env.float("SWITCHYARD_ROLLOUT_GUARD_INTERVAL_S", default=None)

# `switchyard serve` at SIGTERM (gateway/drain.py): /readyz says 503 while the server still
# accepts for the grace, then in-flight requests get at most DRAIN_S. 5 + 25 fits the 30 s
# an orchestrator waits by default before it kills (Kubernetes' terminationGracePeriodSeconds).
DRAIN_GRACE_S = env.float("SWITCHYARD_DRAIN_GRACE_SECONDS", default=5.0)
DRAIN_S = env.float("SWITCHYARD_DRAIN_SECONDS", default=25.0)

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's request logger prints the full path, query string included (D-12).
    "loggers": {
        "django.request": {"level": "ERROR"},
        "django.server": {"level": "ERROR"},
        "httpx": {"level": "WARNING"},  # it logs every request URL at INFO
    },
}
