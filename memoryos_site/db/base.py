"""PostgreSQL through Django's own backend; with EMBEDDED_PGDATA set, the embedded server is started on first use.

Settings name this backend only for the embedded database, so importing settings starts nothing: the server starts
when a process first connects (or opens dbshell), once per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.postgresql import base, client

from memoryos_site.database import embedded_server_ensure


def _socket_dir(settings_dict: dict[str, Any]) -> str:
    """Start the embedded server these settings name (if it is not running yet); return its socket directory."""
    return embedded_server_ensure(Path(settings_dict["EMBEDDED_PGDATA"]))


class DatabaseClient(client.DatabaseClient):
    def runshell(self, parameters: list[str]) -> None:
        """psql on the embedded server, started first if need be."""
        _socket_dir(self.connection.settings_dict)
        super().runshell(parameters)


class DatabaseWrapper(base.DatabaseWrapper):
    client_class = DatabaseClient

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        """A connection to the embedded server, started first if need be."""
        conn_params = {**conn_params, "host": _socket_dir(self.settings_dict)}
        return super().get_new_connection(conn_params)
