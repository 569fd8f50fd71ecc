#!/usr/bin/env python
"""Django's command-line utility for MemoryOS."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
    from django.core.management import execute_from_command_line

    from memoryos_site.database import DatabaseUnavailable

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUnavailable as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
