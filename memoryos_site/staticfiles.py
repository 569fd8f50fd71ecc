"""A static files finder for front-end files that ship inside installed Python packages.

plotly's Python package bundles the plotly.js build its figures are drawn with; serving that file (rather than a
committed copy or a CDN) keeps the two versions in step and the product working offline. The finder is what both
`runserver` (DEBUG) and `collectstatic` + whitenoise (production) read, so one entry here serves it everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

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
