#!/usr/bin/env python
"""Django's command-line utility for MemoryOS."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
    import psycopg
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    from memoryos_site.database import DatabaseUnavailable, redact

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUnavailable as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    except (OperationalError, psycopg.OperationalError) as exc:
        # An unreachable server is a one-line message naming the URL (password hidden), not a traceback.
        from django.conf import settings

        url = redact(settings.DATABASE_URL) if settings.DATABASE_URL else "the embedded PostgreSQL"
        reason = " ".join(str(exc).split())
        sys.stderr.write(f"error: cannot use the database {url}: {reason}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
