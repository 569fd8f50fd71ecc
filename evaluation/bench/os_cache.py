"""The OS cache under the embedded database, as a warm figure assumes it: the database's files read just before.

A figure "first asked" or of the proxy reads its users' rows from the OS cache, not from PostgreSQL's 128 MB. On a
server whose memory is its own, a cached 8 KB page costs a few microseconds to read whenever it was last read. On
the shared virtual machine this project is measured on it does not: the page cache keeps the files (the kernel's
count of cached memory hardly moves), but the kernel's DAMON pages out memory nobody touched for about a minute
(`kdamond`, a `pageout` scheme), so a page read again after that costs 15–110 µs, against 2–3 µs right after the
files were read through once (docs/results.md, 29 November 2026). Between a bench's phases that was enough to double
the proxy's overhead. So before each phase that reads from the OS cache, a warm run reads the database's files
through once (a second for 2.3 GB, about 40 s for 21 GB) and reports how long a random read of the page table took
before, just after, and at the phase's end: the figures then time the code with the database in memory, as the goals
describe, and the report shows what the phase found.

Only for the embedded server, whose files are on this machine; never for `--cold`, which reads from disk on purpose.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from time import perf_counter

from django.conf import settings
from django.db import connection

CHUNK = 1 << 20  # bytes a read while the files are read through
PROBES = 400  # random 8 KB reads of the page table's file, timed before and after
BLOCK = 8192


def database_files_read(*, phase: str, seed: int = 0) -> dict:
    """Read the embedded database's files through the OS cache, after timing random reads of its page table.

    Returns what a report keeps: the phase, µs per random 8 KB read of the page table's file before and after, the
    gigabytes read and the seconds it took; or, where nothing can be read (a server elsewhere, files this process may
    not read), the phase and why."""
    if not settings.EMBEDDED_DATABASE:
        return {"phase": phase, "skipped": "the database is not the embedded server: its files are elsewhere"}
    directory, probed = _database_paths()
    rng = random.Random(seed)
    try:
        before = _read_us(probed, rng)
        started, size = perf_counter(), _read_through(directory)
        after = _read_us(probed, rng)
    except PermissionError as exc:
        return {"phase": phase, "skipped": f"the database's files cannot be read by this process: {exc}"}
    return {
        "phase": phase,
        "read_us_before": before,
        "read_us_after": after,
        "gb_read": round(size / 1e9, 2),
        "seconds": round(perf_counter() - started, 1),
    }


def page_table_read_us(*, seed: int = 0) -> float | None:
    """µs per random 8 KB read of the embedded database's page table now (None for a server elsewhere, or files
    this process may not read): at a phase's end, how much of what was read through before it is still cached."""
    if not settings.EMBEDDED_DATABASE:
        return None
    try:
        return _read_us(_database_paths()[1], random.Random(seed + 1))
    except PermissionError:
        return None


def _database_paths() -> tuple[Path, Path]:
    """The current database's directory under the embedded server's data, and its page table's first file."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        oid = cursor.fetchone()[0]
        cursor.execute("SELECT pg_relation_filepath('memory_page')")
        relative = cursor.fetchone()[0]
    pgdata = Path(settings.EMBEDDED_PGDATA)
    return pgdata / "base" / str(oid), pgdata / relative


def _read_us(path: Path, rng: random.Random) -> float | None:
    """µs per read of PROBES random 8 KB blocks of `path` (None for an empty file)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        blocks = os.fstat(descriptor).st_size // BLOCK
        if not blocks:
            return None
        offsets = [rng.randrange(blocks) * BLOCK for _ in range(PROBES)]
        started = perf_counter()
        for offset in offsets:
            os.pread(descriptor, BLOCK, offset)
        return round((perf_counter() - started) / PROBES * 1e6, 1)
    finally:
        os.close(descriptor)


def _read_through(directory: Path) -> int:
    """Read every file of `directory` from start to end; the bytes read."""
    total = 0
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        try:
            with open(path, "rb", buffering=0) as file:
                while chunk := file.read(CHUNK):
                    total += len(chunk)
        except FileNotFoundError:
            continue  # a relation's file removed meanwhile (a table rewritten, a segment truncated)
    return total
