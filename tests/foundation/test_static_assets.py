"""htmx and plotly.js come from their installed packages, in development and in production, never from a CDN."""

from __future__ import annotations

import re

from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client

HTMX = "django_htmx/htmx-2.min.js"
PLOTLY = "vendor/plotly/plotly.min.js"


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


def test_collectstatic_gathers_both_and_whitenoise_serves_them_with_debug_off(settings, tmp_path, db):
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", interactive=False, verbosity=0)

    assert (tmp_path / HTMX).is_file() and (tmp_path / PLOTLY).is_file()
    for asset in (HTMX, PLOTLY):
        response = Client().get(f"/static/{asset}")  # a fresh client: whitenoise reads STATIC_ROOT as it starts
        assert response.status_code == 200, asset
        assert response["Content-Type"].startswith("text/javascript"), asset
        response.close()  # sends request_finished, which checks the database connection (hence `db`)
