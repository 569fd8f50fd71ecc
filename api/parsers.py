"""The API's JSON parser: DRF's, with a bound on nesting, so a deeply nested body is a 400 and never a 500."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No request of this API nests deeper than a few levels; the bound keeps later recursion (fingerprints, audit
# digests, serializers) far from Python's recursion limit.
MAX_DEPTH = 32


def json_depth_check(data, limit: int = MAX_DEPTH) -> None:
    """Raise ParseError when `data` nests more than `limit` arrays/objects deep (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > limit:
            raise ParseError(f"JSON nested more than {limit} levels deep.")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


class BoundedJSONParser(JSONParser):
    """JSON bodies nested at most MAX_DEPTH deep; deeper ones (even too deep for the decoder) are a parse error."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.") from None
        json_depth_check(data)
        return data
