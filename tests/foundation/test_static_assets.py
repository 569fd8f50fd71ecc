"""htmx and plotly.js come from their installed packages, in development and in production, never from a CDN; once
collected, every static file is served under a hashed name, compressed and cached for a year."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client, override_settings

HTMX = "django_htmx/htmx-2.min.js"
PLOTLY = "vendor/plotly/plotly.min.js"
HASHED = re.compile(r'(?:src|href)="/static/([^"]+\.[0-9a-f]{12}\.(?:js|css))"')


def test_every_asset_the_base_template_links_is_found_by_the_static_finders(client):
    html = client.get("/accounts/login/").content.decode()

    assets = re.findall(r'(?:src|href)="/static/([^"]+)"', html)

    assert HTMX in assets
    for asset in assets:
        assert finders.find(asset), asset


def test_plotly_js_is_the_file_the_plotly_package_ships():
    found = finders.find(PLOTLY)

    assert found and found.endswith("plotly/package_data/plotly.min.js")
    assert finders.find("vendor/plotly/widgetbundle.js") is None  # only the named file, not its folder


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    """collectstatic once for this module (compressing plotly.js takes seconds)."""
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


@pytest.fixture
def collected(settings, static_root, db):
    """STATIC_ROOT holds what collectstatic wrote, and pages link it."""
    settings.STATIC_ROOT = static_root
    settings.STATIC_COLLECTED = True
    return static_root


def _get(path: str, **headers):
    response = Client().get(path, **headers)  # a fresh client: whitenoise reads STATIC_ROOT as it starts
    response.close()  # sends request_finished, which checks the database connection (hence `db`)
    return response


def test_collectstatic_writes_hashed_names_with_gzip_and_brotli_copies(collected):
    [plotly] = collected.glob("vendor/plotly/plotly.min.*.js")

    assert plotly.with_name(plotly.name + ".br").is_file() and plotly.with_name(plotly.name + ".gz").is_file()
    assert not (collected / PLOTLY).exists()  # only the hashed names are kept
    assert plotly.with_name(plotly.name + ".br").stat().st_size < plotly.stat().st_size / 3


@pytest.mark.parametrize("debug", [False, True])
def test_pages_link_hashed_names_that_are_served_compressed_and_cached_for_a_year(collected, settings, debug):
    settings.DEBUG = debug  # `make run` serves with DEBUG on, as production does with it off

    html = _get("/accounts/login/").content.decode()
    assets = HASHED.findall(html)

    assert any(a.startswith("django_htmx/htmx-2.min.") for a in assets) and any(a.startswith("css/") for a in assets)
    for asset in assets:
        response = _get(f"/static/{asset}", HTTP_ACCEPT_ENCODING="gzip, br")
        assert response.status_code == 200, asset
        assert response["Content-Encoding"] == "br", asset
        assert "max-age=315360000" in response["Cache-Control"] and "immutable" in response["Cache-Control"]


def test_a_second_collectstatic_reuses_the_compressed_copies(collected):
    [brotli_copy] = collected.glob("vendor/plotly/plotly.min.*.js.br")
    written = brotli_copy.stat().st_mtime_ns

    call_command("collectstatic", interactive=False, verbosity=0)

    assert brotli_copy.stat().st_mtime_ns == written
