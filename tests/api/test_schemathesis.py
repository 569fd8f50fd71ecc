"""Schemathesis against the live server: generated requests for every operation never get a 5xx, and every
response matches the schema. Bounded (20 examples per operation) and derandomized, so runs are repeatable.

It drives schemathesis's Python API (an operation's Hypothesis strategy) rather than its pytest plugin, whose
lazy-schema loader does not run on pytest 9 (it sets `Function._nodeid`, which pytest 9 no longer has).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.api.conftest import make_token

EXAMPLES = settings(
    max_examples=20, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def _run(operation, token: str) -> None:
    @given(case=operation.as_strategy())
    @EXAMPLES
    def check(case):
        case.call_and_validate(
            headers={"Authorization": f"Bearer {token}"}, checks=[not_a_server_error, response_schema_conformance]
        )

    check()


@pytest.mark.slow
def test_every_generated_request_is_answered_without_a_server_error_and_by_the_schema(live_server, tenant, memory):
    token = make_token(tenant)  # every scope; Alice's memory exists, so lists and reads answer real objects
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    failures = []

    for operation in operations:
        try:
            _run(operation, token)
        except (Exception, BaseExceptionGroup) as exc:  # collect every operation's failure, not only the first
            failures.append(f"{operation.label}: {exc}")

    assert len(operations) >= 40
    assert failures == [], "\n\n".join(failures)
