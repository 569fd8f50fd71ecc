"""The end user's "Download my memory": one zip holding a page they can read (their turns, topics, profile and
facts in plain words) and the same data as JSON without vectors (embeddings are numbers no person reads, and they
made the download hundreds of kilobytes). The operators' GDPR export (memory.services.gdpr_export) keeps them."""

from __future__ import annotations

import io
import json
import zipfile

from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime

from memory.models import EndUser
from memory.selectors.gdpr import user_export_data

VECTOR_KEYS = frozenset({"embedding", "embeddings", "vector", "vectors"})
HTML_NAME, JSON_NAME = "my-memory.html", "my-memory.json"


def without_vectors(value: object) -> object:
    """`value` (JSON-ready) with every key that holds a vector left out, at any depth."""
    if isinstance(value, dict):
        return {key: without_vectors(item) for key, item in value.items() if key not in VECTOR_KEYS}
    if isinstance(value, list):
        return [without_vectors(item) for item in value]
    return value


def _dated(value: object, key: str = "") -> object:
    """`value` with the ISO timestamps under `at` or `*_at` keys parsed, for the page to write them for people."""
    if isinstance(value, dict):
        return {k: _dated(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_dated(item, key) for item in value]
    if isinstance(value, str) and (key == "at" or key.endswith("_at")):
        return parse_datetime(value) or value
    return value


def memory_download(*, end_user: EndUser) -> bytes:
    """The zip the end user downloads: the readable page and the JSON, both without vectors. Read-only; the caller
    records the download in the audit trail."""
    data = without_vectors(user_export_data(end_user=end_user))
    page = render_to_string("chat/memory_download.html", {"d": _dated(data)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(HTML_NAME, page)
        bundle.writestr(JSON_NAME, json.dumps(data, indent=2, ensure_ascii=False, default=str))
    return buffer.getvalue()
