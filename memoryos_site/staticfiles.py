"""Static files: a finder for front-end files that ship inside installed Python packages, and the storage that
collects every static file under a content-hashed name with gzip and brotli copies, for whitenoise to serve.

plotly's Python package bundles the plotly.js build its figures are drawn with; serving that file (rather than a
committed copy or a CDN) keeps the two versions in step and the product working offline. The finder is what both
`runserver` (DEBUG) and `collectstatic` + whitenoise (production) read, so one entry here serves it everywhere.

With `STATIC_COLLECTED` (production, and `make run`, which collects first) pages link the hashed names, which
whitenoise serves compressed and cached for a year (`immutable`); without it (tests, a bare `runserver`) they link
the files' own names, which the finders serve as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import brotli
import plotly
from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.storage import StaticFilesStorage
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Static path -> the file inside its package. Only the named files, not their folders: plotly's package_data also
# holds a 4.8 MB widget bundle and data sets that the product never serves.
PACKAGE_FILES: dict[str, Path] = {
    "vendor/plotly/plotly.min.js": Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
}


def _storage(static_path: str, file: Path) -> FileSystemStorage:
    """A storage of the file's folder; collectstatic copies its files under `prefix`, the static path's folder."""
    storage = FileSystemStorage(location=file.parent)
    storage.prefix = static_path.rpartition("/")[0]
    return storage


class PackageFileFinder(BaseFinder):
    """Finds the files of PACKAGE_FILES under their static paths."""

    def check(self, **kwargs) -> list[CheckMessage]:
        return [
            Error(f"{file} (static file {path}) does not exist: is its package installed?", id="memoryos.E001")
            for path, file in PACKAGE_FILES.items()
            if not file.is_file()
        ]

    def find(self, path: str, find_all: bool = False, **kwargs) -> str | list[str]:
        file = PACKAGE_FILES.get(path)
        if file is None or not file.is_file():
            return []  # not None: finders.find() would count None as a match (Django's own finders do the same)
        return [str(file)] if find_all else str(file)

    def list(self, ignore_patterns: list[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        for path, file in PACKAGE_FILES.items():
            if file.is_file():
                yield file.name, _storage(path, file)


# A name as ManifestStaticFilesStorage hashes it: "plotly.min.0123456789ab.js".
HASHED_NAME = re.compile(r"\.[0-9a-f]{12}\.[^./]+$")
BROTLI_QUALITY = 9  # 11 saves another 10 % on plotly.js but takes 40 s instead of 2 s to compress it


class ReusingCompressor(Compressor):
    """whitenoise's compressor, reusing the compressed copies of a hashed file when they exist.

    A hashed name is a digest of its content, so a copy already collected under it is the same bytes: `make run`
    collects at every start, and compresses only what changed since the last time.
    """

    def compress(self, path: str) -> list[str]:
        copies = [path + suffix for suffix in (".br", ".gz")]
        if HASHED_NAME.search(path) and all(Path(copy).is_file() for copy in copies):
            return copies
        return super().compress(path)

    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        return brotli.compress(data, quality=BROTLI_QUALITY)


class CollectedStaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed names with gzip and brotli copies (whitenoise), linked whenever settings.STATIC_COLLECTED is on,
    DEBUG or not; otherwise each file's own name. collectstatic always writes the hashed, compressed files."""

    def url(self, name: str | None, force: bool = False) -> str:
        if not settings.STATIC_COLLECTED:
            return StaticFilesStorage.url(self, name)
        return super().url(name, force=True)  # force: hashed under DEBUG too (`make run`), as in production

    def create_compressor(self, **kwargs) -> Compressor:
        return ReusingCompressor(**kwargs)
