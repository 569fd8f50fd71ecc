"""What the database connection allows the statements the project writes out in SQL (retrieval's batches, the
visits queue)."""

from __future__ import annotations

from django.db import connection


def several_statements_per_execute() -> bool:
    """Whether one execute may carry several statements: yes with Django's default client-side parameter binding,
    no with the database's `server_side_binding` option."""
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")
