"""The one seam to webhook receivers: which URLs may be called, and one signed POST to one of them.

Server-side request forgery is refused twice. When an endpoint is saved, its URL must be https (http only to a
private or loopback address, and only where WEBHOOK_ALLOW_PRIVATE_URLS is on), with no credentials, and a literal
address must be allowed. When it is called, the host is resolved and every address it resolves to is checked; the
connection then goes to the checked address (the name still serves for TLS and the Host header), so a name that
resolves to a public address when checked and to a private one when called (DNS rebinding) reaches nothing.
Link-local, metadata, multicast, unspecified and reserved addresses are refused whatever the setting. Redirects are
not followed (a 3xx is a failed attempt).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

MAX_RESPONSE_BYTES = 64 * 1024  # read and ignored: the status code is the answer
ERROR_CHARS = 500
# Cloud metadata services that are not link-local (AWS over IPv6, Alibaba Cloud): refused like 169.254.169.254.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
PRIVATE_NAMES = ("localhost",)


class UrlRefused(ValueError):
    """The URL may not be called; the message says why."""


@dataclass(frozen=True)
class PostResult:
    """What one POST came to: the status code (None when no answer came), its latency, and the error if any."""

    status_code: int | None
    latency_ms: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def private_allowed() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_URLS)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def address_refusal(address, *, scheme: str, allow_private: bool) -> str:
    """Why `address` may not be called over `scheme` ("" when it may)."""
    if address in METADATA_ADDRESSES or address.is_link_local:
        return f"{address} is a link-local or metadata address"
    if address.is_multicast or address.is_unspecified or (address.is_reserved and not address.is_loopback):
        return f"{address} is not a unicast address"
    private = address.is_loopback or address.is_private or not address.is_global
    if private and not allow_private:
        return f"{address} is a private address (WEBHOOK_ALLOW_PRIVATE_URLS is off)"
    if scheme == "http" and not private:
        return "plain http is allowed only to private addresses: use https"
    return ""


def url_check(url: str, *, allow_private: bool | None = None) -> str:
    """The URL, stripped, when an endpoint may be saved with it; raises UrlRefused saying why not."""
    allow_private = private_allowed() if allow_private is None else allow_private
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UrlRefused("the URL must be https://host/path")
    if parts.username or parts.password:
        raise UrlRefused("the URL must not hold credentials: the signature authenticates each delivery")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise UrlRefused("the URL's port is not valid") from None
    host = parts.hostname
    address = _address(host)
    if address is not None and (why := address_refusal(address, scheme=parts.scheme, allow_private=allow_private)):
        raise UrlRefused(why)
    if parts.scheme == "http" and not allow_private:
        raise UrlRefused("plain http is allowed only to private addresses in development: use https")
    if address is None and _private_name(host) and not allow_private:
        raise UrlRefused(f"{host} is a private address (WEBHOOK_ALLOW_PRIVATE_URLS is off)")
    return url


def _private_name(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host in PRIVATE_NAMES or host.endswith(".localhost")


def addresses_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the resolver; tests may replace it to stand for a name's DNS)."""
    return list(dict.fromkeys(str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)))


def _address_to_call(host: str, port: int, scheme: str, allow_private: bool) -> str:
    """One checked address of `host`; UrlRefused when any of its addresses is refused (all must pass)."""
    try:
        found = addresses_resolve(host, port)
    except OSError as exc:
        raise UrlRefused(f"{host} does not resolve: {exc}") from None
    if not found:
        raise UrlRefused(f"{host} does not resolve")
    for raw in found:
        if why := address_refusal(_address(raw), scheme=scheme, allow_private=allow_private):
            raise UrlRefused(why)
    return found[0]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to a checked address, naming the host in the Host header."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address, verifying the certificate against the host's name."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def webhook_post(*, url: str, body: bytes, headers: dict[str, str], timeout: float) -> PostResult:
    """POST `body` to `url` once, after checking where it goes; never raises for what the receiver does."""
    started = time.monotonic()
    parts = urlsplit(url)
    connection = None
    try:
        url_check(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""  # url_check refused a URL without one
        address = _address_to_call(host, port, parts.scheme, private_allowed())
        pinned = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
        connection = pinned(host, port, address=address, timeout=timeout)
        connection.request("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body, headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)
        return PostResult(response.status, _ms_since(started))
    except UrlRefused as exc:
        return PostResult(None, _ms_since(started), f"refused: {exc}"[:ERROR_CHARS])
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return PostResult(None, _ms_since(started), f"{type(exc).__name__}: {exc}"[:ERROR_CHARS])
    finally:
        if connection is not None:
            connection.close()


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
