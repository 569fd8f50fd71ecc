"""The security suite drives every interface: the API's personas and Alice's memory are shared with the API tests."""

from __future__ import annotations

from tests.api.conftest import (  # noqa: F401  fixtures
    api,
    exports_in_a_temporary_folder,
    fresh_rate_limit_counts,
    memory,
    token,
)
