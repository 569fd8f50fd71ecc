"""Which URLs a webhook endpoint may have: https to public hosts; private ones (and then plain http) only where the
setting allows; link-local and metadata addresses never."""

from __future__ import annotations

import pytest

from memory.webhook_transport import UrlRefused, url_check

NEVER = [
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/",
    "https://[fe80::1]/hook",
    "https://[fd00:ec2::254]/",
    "https://100.100.100.200/",
    "https://[::ffff:169.254.169.254]/",
    "https://0.0.0.0/",
    "https://224.0.0.1/",
]


@pytest.mark.parametrize("url", NEVER)
def test_link_local_metadata_and_non_unicast_addresses_are_refused_whatever_the_setting(url):
    for allow_private in (False, True):
        with pytest.raises(UrlRefused):
            url_check(url, allow_private=allow_private)


@pytest.mark.parametrize("url", ["https://127.0.0.1/", "https://10.0.0.5/", "https://localhost:8443/", "http://[::1]/"])
def test_private_and_loopback_addresses_need_the_setting(url):
    with pytest.raises(UrlRefused, match="private"):
        url_check(url, allow_private=False)

    assert url_check(url, allow_private=True) == url


def test_https_to_a_public_host_is_allowed():
    assert url_check(" https://hooks.example.com/memory?team=7 ", allow_private=False) == (
        "https://hooks.example.com/memory?team=7"
    )


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://hooks.example.com/", "https"),
        ("http://93.184.216.34/", "https"),
        ("ftp://hooks.example.com/", "https://"),
        ("https://user:pass@hooks.example.com/", "credentials"),
        ("https:///no-host", "https://"),
        ("https://hooks.example.com:99999/", "port"),
    ],
)
def test_other_urls_are_refused_saying_why(url, why):
    with pytest.raises(UrlRefused, match=why):
        url_check(url, allow_private=False)


def test_plain_http_to_a_public_address_is_refused_even_where_private_ones_are_allowed():
    with pytest.raises(UrlRefused, match="https"):
        url_check("http://93.184.216.34/", allow_private=True)
