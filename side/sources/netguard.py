"""SSRF guard: refuse to fetch URLs that point inside the network Side runs in.

Cited URLs come from anyone's edit, so a fetcher that follows them blindly can be steered at
``http://169.254.169.254/`` (cloud credentials), ``http://localhost:6379/`` (our own Redis) or
a private admin panel. Every URL, and every redirect hop, goes through :func:`check_url`:

* only ``http`` and ``https``;
* the host name is resolved with :func:`socket.getaddrinfo` and **every** address returned
  must be public. Resolving (rather than parsing) also normalises the odd spellings that
  bypass naive filters: ``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``[::ffff:127.0.0.1]``;
* IPv6 addresses that embed an IPv4 one (mapped, 6to4, Teredo, NAT64) are judged by the
  embedded address as well;
* known metadata names and addresses are refused by name too.

``allow_hosts`` (from :class:`side.config.FetchConfig`) exempts host names, IPs or CIDR
networks, so tests and deployments can reach a local server on purpose. An entry may name a
port (``127.0.0.1:8080``, ``intranet.test:443``, ``[::1]:8080``): then only that port is
exempt; a host alone exempts every port. Since every redirect hop goes through the same
check, a redirect from an allowed port to another port on the same host is refused.

DNS rebinding: a check followed by a second, independent resolution at connect time could be
answered with a different (private) address. :func:`guarded_session` closes that gap by doing
the check *inside* the connection: the socket is opened to exactly the address that was just
checked. Proxies from the environment are disabled for the same reason (the proxy, not us,
would resolve the name).

Time: a host name's own DNS servers can be as slow as its web server, so resolution takes a
``timeout`` too (the fetch's remaining time), and :func:`guarded_session` hands every socket it
opens to an ``on_connect`` callback, through which the fetch's deadline can shut it down.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from side.errors import ConfigError, SourceBlockedError, SourceFetchError

__all__ = [
    "IPAddress", "IPNetwork", "ALLOWED_SCHEMES", "METADATA_HOSTS", "METADATA_ADDRESSES",
    "BLOCKED_NETWORKS", "parse_allow_entry", "AllowList", "blocked_reason", "resolve", "check_host",
    "check_url", "check_url_addresses", "guarded_session",
]

if TYPE_CHECKING:
    import requests
    from urllib3.connection import HTTPConnection as _ConnectionBase
else:
    _ConnectionBase = object  # a plain mixin at run time; _pool_classes puts urllib3's class after it

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = frozenset({"http", "https"})

#: Names that reach a cloud metadata service; refused even if they resolve to something public.
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data"})

#: Addresses refused explicitly (most are also non-global, listed so the intent is visible).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "fd00:ec2::23",
              "168.63.129.16")  # the last: Azure's host agent (WireServer), a public address
)

#: Ranges refused on top of ``not is_global``; some are "global" by IANA's table yet not public.
BLOCKED_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "fc00::/7",  # unique local
        "fe80::/10",
        "fec0::/10",  # deprecated site-local
        "ff00::/8",
        "3fff::/20",  # IPv6 documentation (RFC 9637); Python 3.11 calls it global
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


#: ``[IPv6 address or network]`` with an optional ``:port``.
_BRACKETED = re.compile(r"^\[([^\[\]]+)\](?::([0-9]{1,5}))?$")
#: A host name as an allow-list entry may give it (letters, digits, dots, hyphens, underscores).
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$")


def _entry_port(text: str, entry: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ConfigError(f"fetch.allow_hosts entry {entry!r}: port must be 1-65535")
    return port


def parse_allow_entry(entry: str) -> tuple[str | IPNetwork, int | None] | None:
    """One ``allow_hosts`` entry as (host name or IP network, port or None for any port).

    ``host``, ``host:port``, ``10.0.0.0/8``, ``10.0.0.0/8:8080``, ``::1``, ``[::1]``,
    ``[::1]:8080``; None for a blank entry. Anything else is a :class:`ConfigError`, so a
    typo is refused when the list is read instead of silently never matching.
    """
    raw = entry
    entry = entry.strip().lower()
    if not entry:
        return None
    port: int | None = None
    if match := _BRACKETED.match(entry):
        host, port_text = match.groups()
        port = None if port_text is None else _entry_port(port_text, raw)
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ConfigError(f"fetch.allow_hosts entry {raw!r}: [...] must hold an IPv6 address") from None
        if network.version != 6:
            raise ConfigError(f"fetch.allow_hosts entry {raw!r}: [...] must hold an IPv6 address")
        return network, port
    if entry.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        entry, port_text = entry.split(":")
        if not port_text.isdigit():
            raise ConfigError(f"fetch.allow_hosts entry {raw!r}: the port must be a number")
        port = _entry_port(port_text, raw)
    try:
        return ipaddress.ip_network(entry, strict=False), port
    except ValueError:
        pass
    name = entry.rstrip(".")
    if not _HOST_NAME.match(name):
        raise ConfigError(f"fetch.allow_hosts entry {raw!r} is not a host, host:port, IP network "
                          f"or [IPv6]:port")
    return name, port


@dataclass(frozen=True)
class AllowList:
    """Parsed ``allow_hosts``: host names and IP networks (a bare IP is a /32 or /128), each
    with the one port it is allowed on, or None for any port."""

    names: frozenset[tuple[str, int | None]]
    networks: tuple[tuple[IPNetwork, int | None], ...]

    @classmethod
    def parse(cls, entries: Iterable[str] | AllowList = ()) -> AllowList:
        if isinstance(entries, AllowList):
            return entries
        names: set[tuple[str, int | None]] = set()
        networks: list[tuple[IPNetwork, int | None]] = []
        for entry in entries:
            parsed = parse_allow_entry(entry)
            if parsed is None:
                continue
            host, port = parsed
            if isinstance(host, str):
                names.add((host, port))
            else:
                networks.append((host, port))
        return cls(frozenset(names), tuple(networks))

    def allows_name(self, host: str, port: int) -> bool:
        return (host, None) in self.names or (host, port) in self.names

    def allows_ip(self, ip: IPAddress, port: int) -> bool:
        return any(ip.version == net.version and ip in net and allowed in (None, port)
                   for net, allowed in self.networks)


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 one carries (mapped, 6to4, Teredo, NAT64): judged as well."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    out: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    if ip in _NAT64:
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    # IPv4-compatible (deprecated) ::a.b.c.d
    if int(ip) >> 32 == 0 and int(ip) > 1:
        out.append(ipaddress.IPv4Address(int(ip)))
    return out


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be contacted, or None if it is a public unicast address."""
    if ip in METADATA_ADDRESSES:
        return "cloud metadata address"
    for inner in _embedded_ipv4(ip):
        reason = blocked_reason(inner)
        if reason:
            return f"embeds {inner} ({reason})"
    for attr in ("is_loopback", "is_link_local", "is_multicast", "is_unspecified", "is_reserved"):
        if getattr(ip, attr):
            return attr[3:].replace("_", "-") + " address"
    for net in BLOCKED_NETWORKS:
        if ip.version == net.version and ip in net:
            return f"non-public network {net}"
    if ip.is_private or not ip.is_global:
        return "non-public address"
    return None


def _parse_ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone id


def _getaddrinfo(host: str, port: int, timeout: float | None) -> list:
    """``socket.getaddrinfo``, given up after ``timeout`` seconds.

    The C resolver cannot be interrupted, so it runs in a daemon thread that is left to finish
    on its own (bounded by the system resolver's timeouts) when the caller stops waiting.
    """
    if timeout is None:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="side-resolve", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout))
    if thread.is_alive():
        raise SourceFetchError(f"resolving host {host!r} timed out after {timeout:g} s", transient=True)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["infos"]  # type: ignore[return-value]


def resolve(host: str, port: int, timeout: float | None = None) -> list[IPAddress]:
    """All addresses ``host`` resolves to (getaddrinfo also parses decimal/octal/hex IPv4)."""
    try:
        infos = _getaddrinfo(host, port, timeout)
    except (socket.gaierror, UnicodeError) as exc:
        transient = isinstance(exc, socket.gaierror) and exc.errno == socket.EAI_AGAIN
        raise SourceFetchError(f"cannot resolve host {host!r}: {exc}", transient=transient) from exc
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = _parse_ip(str(sockaddr[0]))
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise SourceFetchError(f"host {host!r} has no address")
    return addresses


def check_host(host: str, port: int, allow_hosts: Iterable[str] | AllowList = (),
               timeout: float | None = None) -> list[IPAddress]:
    """Resolve ``host`` (within ``timeout`` s) and return its addresses if all may be contacted, else raise.

    An allow-listed name (on this port) skips the check (its addresses are still returned,
    for pinning); an allow-listed address is exempt only on its entry's port, if it names one.
    """
    allow = AllowList.parse(allow_hosts)
    name = host.strip("[]").lower().rstrip(".")
    if not name:
        raise SourceBlockedError("URL has no host")
    if allow.allows_name(name, port):
        return resolve(name, port, timeout)
    if name in METADATA_HOSTS:
        raise SourceBlockedError(f"refusing to contact {host}: cloud metadata host")
    addresses = resolve(name, port, timeout)
    for ip in addresses:
        if allow.allows_ip(ip, port):
            continue
        reason = blocked_reason(ip)
        if reason:
            raise SourceBlockedError(f"refusing to contact {host} port {port} ({ip}): {reason}")
    return addresses


def check_url(url: str, allow_hosts: Sequence[str] | AllowList = (), timeout: float | None = None) -> None:
    """Raise :class:`SourceBlockedError` unless ``url`` is http(s) to public addresses only."""
    check_url_addresses(url, allow_hosts, timeout)


def check_url_addresses(url: str, allow_hosts: Sequence[str] | AllowList = (),
                        timeout: float | None = None) -> list[IPAddress]:
    """:func:`check_url`, returning the checked addresses."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SourceBlockedError(f"malformed URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise SourceBlockedError(f"refusing URL scheme {scheme or '(none)'!r}: only http and https")
    if not parts.hostname:
        raise SourceBlockedError(f"URL has no host: {url!r}")
    if port is None:
        port = 443 if scheme == "https" else 80
    return check_host(parts.hostname, port, allow_hosts, timeout)


# --- connection pinning -------------------------------------------------------------------


class _GuardedConnectionMixin(_ConnectionBase):
    """Resolve, check and connect in one step, so the socket goes to the address just checked.

    Mixed into urllib3's connection classes; ``allow`` and ``on_connect`` are set on the
    generated subclass. TLS still verifies the certificate against the URL's host name
    (``self.host``). Resolution gets the connect timeout too.
    """

    allow: AllowList = AllowList(frozenset(), ())
    on_connect: Callable[[socket.socket], None] | None = None

    def _new_conn(self) -> socket.socket:
        from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
        from urllib3.util import connection as u3conn

        timeout = self.timeout if isinstance(self.timeout, (int, float)) else None
        addresses = check_host(self._dns_host, self.port, self.allow, timeout)
        last_error: OSError | None = None
        for ip in addresses:
            try:
                sock = u3conn.create_connection(
                    (str(ip), self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
                if self.on_connect is not None:
                    self.on_connect(sock)
                return sock
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, f"connection to {ip} timed out") from exc
            except OSError as exc:
                last_error = exc
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}")


def _pool_classes(allow: AllowList, on_connect: Callable[[socket.socket], None] | None = None) -> dict[str, type]:
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    hook = None if on_connect is None else staticmethod(on_connect)
    attrs = {"allow": allow, "on_connect": hook}
    http_conn = type("GuardedHTTPConnection", (_GuardedConnectionMixin, HTTPConnection), attrs)
    https_conn = type("GuardedHTTPSConnection", (_GuardedConnectionMixin, HTTPSConnection), attrs)
    return {
        "http": type("GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn}),
        "https": type("GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn}),
    }


def guarded_session(allow_hosts: Sequence[str] | AllowList = (), user_agent: str | None = None,
                    on_connect: Callable[[socket.socket], None] | None = None) -> requests.Session:
    """A :class:`requests.Session` whose every connection is checked and pinned (see module doc).

    Redirects must still be followed by the caller (``allow_redirects=False``) with
    :func:`check_url` on each hop, so that a blocked target is refused before any connection.
    ``on_connect`` gets every socket opened, before TLS (a fetch deadline watches them).
    """
    import requests
    from requests.adapters import HTTPAdapter

    classes = _pool_classes(AllowList.parse(allow_hosts), on_connect)

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = dict(classes)

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> NoReturn:
            raise SourceBlockedError("proxies are disabled for source fetching")

    session = requests.Session()
    session.trust_env = False  # no proxies or .netrc from the environment
    adapter = GuardedAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if user_agent:
        session.headers["User-Agent"] = user_agent
    return session
