"""Integration personas: Acme's tokens and Alice's memory (shared with the API tests), and one embedder that this
process and the servers it starts all use: the fake OpenAI-compatible endpoint's, so stored vectors match."""

from __future__ import annotations

import openai
import pytest

from evaluation.fake_llm import fake_llm_server
from memory.embeddings import EndpointEmbedder, use_embedder
from memory.llm import use_llm
from memory.services.embedding_state import forget_verification
from tests.api.conftest import (  # noqa: F401  fixtures
    exports_in_a_temporary_folder,
    fresh_rate_limit_counts,
    make_token,
    memory,
    token,
)
from tests.foundation.processes import database_url_for_children, site_served

EMBEDDING_MODEL = "fake-embedding"


@pytest.fixture(scope="session")
def fake_model_url() -> str:
    """The base URL (…/v1) of a fake OpenAI-compatible model and embeddings endpoint, for the whole run."""
    with fake_llm_server() as url:
        yield url


@pytest.fixture(autouse=True)
def shared_embedder(fake_model_url, settings, embedder):
    """This process embeds with the fake endpoint, as the servers it starts do (see server_env)."""
    settings.EMBEDDING_BASE_URL = fake_model_url
    forget_verification()
    with use_embedder(EndpointEmbedder(EMBEDDING_MODEL)) as shared:
        yield shared
    forget_verification()


@pytest.fixture
def model(settings, fake_model_url):
    """The fake model at the LLM seam, reached over HTTP by the real client the seam builds."""
    settings.LLM_BASE_URL, settings.LLM_MODEL = fake_model_url, "fake-load-model"
    with use_llm(None):
        yield


def proxy_client(live_server, api_key: str | None) -> openai.OpenAI:
    """The `openai` client itself, its base_url at the memory proxy of the live test server."""
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=api_key or "none", max_retries=0)


def server_env(fake_model_url: str) -> dict[str, str]:
    """The environment of a server process: the fake endpoint's embeddings, no model (offline replies)."""
    return {
        "EMBEDDING_BACKEND": "openai",
        "EMBEDDING_BASE_URL": fake_model_url,
        "EMBEDDING_MODEL": EMBEDDING_MODEL,
        "LLM_BASE_URL": "",
    }


@pytest.fixture
def stranger_token(other_tenant) -> str:
    """A token of Globex, with every scope: it must never reach Acme's memory."""
    return make_token(other_tenant)


@pytest.fixture(scope="session")
def site_url(django_db_setup, django_db_blocker, fake_model_url, tmp_path_factory) -> str:
    """The site as `make run` serves it (`manage.py serve`), on the test database, for the whole run: its base URL.
    Its rate limit is high, as in this process (see fresh_rate_limit_counts)."""
    with django_db_blocker.unblock():
        database_url = database_url_for_children()
    folder = tmp_path_factory.mktemp("site")
    env = {"DATABASE_URL": database_url, "API_RATE_LIMIT": "10000/min", **server_env(fake_model_url)}
    with site_served(env=env, var=folder / "var", log=folder / "serve.log") as url:
        yield url
