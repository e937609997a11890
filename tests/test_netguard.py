"""SSRF guard: address classes, bypass spellings, allow-lists and connection pinning.

No test here touches the network: literal IPs are parsed by getaddrinfo locally, and host
names are answered by a fake resolver.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from side.config import FetchConfig
from side.errors import ConfigError, SourceBlockedError, SourceFetchError
from side.sources.fetch import fetch_source
from side.sources.netguard import AllowList, blocked_reason, check_url, check_url_addresses, guarded_session

from httpserver import LocalServer, Response, redirect

_real_getaddrinfo = socket.getaddrinfo


class FakeDNS:
    """Host name -> successive answers (the last one repeats); numeric hosts parse for real."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.calls: list[str] = []

    def __setitem__(self, host: str, addresses: list[str]) -> None:
        self.answers[host] = [addresses]

    def getaddrinfo(self, host, port, *args, **kwargs):
        self.calls.append(host)
        if host not in self.answers:
            try:
                ipaddress.ip_address(str(host).strip("[]"))
            except ValueError:
                if not str(host).replace(".", "").replace("x", "").isdigit():
                    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            return _real_getaddrinfo(host, port, *args, **kwargs)
        queue = self.answers[host]
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        out = []
        for addr in addresses:
            if ":" in addr:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (addr, port, 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (addr, port)))
        return out


@pytest.fixture
def fake_dns(monkeypatch) -> FakeDNS:
    dns = FakeDNS()
    monkeypatch.setattr(socket, "getaddrinfo", dns.getaddrinfo)
    return dns


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/",
        "file:///etc/passwd",
        "gopher://x/",
        "javascript:alert(1)",
        "data:text/html,hi",
        "//example.org/",
        "http:///nohost",
    ],
)
def test_refuses_other_schemes_and_missing_host(url):
    with pytest.raises(SourceBlockedError):
        check_url(url)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.9.9.9",
        "10.0.0.1",
        "172.16.5.4",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "169.254.1.1",
        "100.64.0.1",
        "100.127.255.254",
        "100.100.100.200",
        "0.0.0.0",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "[::1]",
        "[::]",
        "[fe80::1]",
        "[fc00::1]",
        "[fd12:3456::1]",
        "[fd00:ec2::254]",
        "[ff02::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:10.0.0.1]",
        "[::ffff:169.254.169.254]",
        "[::ffff:a9fe:a9fe]",
        "[2002:7f00:1::]",
        "[2002:a00:1::]",
        "[64:ff9b::a00:1]",
        "[fec0::1]",
    ],
)
def test_blocks_non_public_addresses(host):
    with pytest.raises(SourceBlockedError):
        check_url(f"http://{host}/")


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0177.0.0.1", "0x7f000001", "0x7f.1", "127.1", "017700000001", "0177.1", "167772161"],
)
def test_blocks_decimal_octal_and_hex_spellings(host):
    """getaddrinfo normalises these to 127.0.0.1 / 10.0.0.1; the guard must see through them."""
    with pytest.raises(SourceBlockedError) as err:
        check_url(f"http://{host}:8080/x")
    assert "127.0.0.1" in str(err.value) or "10.0.0.1" in str(err.value)


@pytest.mark.parametrize(
    "url", ["http://8.8.8.8/", "https://1.1.1.1:8443/a?b", "http://[2001:4860:4860::8888]/"]
)
def test_allows_public_addresses(url):
    check_url(url)


def test_every_resolved_address_is_checked(fake_dns):
    fake_dns["mixed.test"] = ["93.184.216.34", "10.1.2.3"]
    fake_dns["public.test"] = ["93.184.216.34", "2606:2800:220:1::1"]
    with pytest.raises(SourceBlockedError, match="10.1.2.3"):
        check_url("http://mixed.test/")
    check_url("https://public.test/page")
    assert [str(ip) for ip in check_url_addresses("https://public.test/")] == [
        "93.184.216.34",
        "2606:2800:220:1::1",
    ]


def test_metadata_names_refused_before_resolving(fake_dns):
    for url in ("http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./"):
        with pytest.raises(SourceBlockedError, match="metadata"):
            check_url(url)
    assert fake_dns.calls == []


def test_host_resolving_to_loopback_is_blocked(fake_dns):
    fake_dns["evil.test"] = ["127.0.0.1"]
    fake_dns["evil6.test"] = ["::ffff:192.168.0.1"]
    for url in ("http://evil.test/", "http://evil6.test/"):
        with pytest.raises(SourceBlockedError):
            check_url(url)


def test_unresolvable_host_is_a_fetch_error(fake_dns):
    with pytest.raises(SourceFetchError, match="cannot resolve") as err:
        check_url("http://no-such-host.invalid/")
    assert not isinstance(err.value, SourceBlockedError)


def test_allow_hosts_by_ip_network_and_name(fake_dns):
    fake_dns["intranet.test"] = ["10.9.9.9"]
    check_url("http://127.0.0.1:8080/", allow_hosts=["127.0.0.1"])
    check_url("http://127.0.0.5/", allow_hosts=["127.0.0.0/8"])
    check_url("http://2130706433/", allow_hosts=["127.0.0.0/8"])
    check_url("http://[::1]/", allow_hosts=["::1"])
    check_url("http://intranet.test/", allow_hosts=["Intranet.test"])
    with pytest.raises(SourceBlockedError):
        check_url("http://10.0.0.1/", allow_hosts=["127.0.0.1"])
    with pytest.raises(SourceBlockedError):
        check_url("http://169.254.169.254/", allow_hosts=["127.0.0.0/8", "intranet.test"])


def test_allow_list_parsing():
    allow = AllowList.parse(["127.0.0.1", "10.0.0.0/8", "Example.ORG.", " ", "[::1]", "intranet.test:8443",
                             "127.0.0.2:8080", "[fd00::/8]:9000", "::2"])
    assert allow.names == frozenset({("example.org", None), ("intranet.test", 8443)})
    assert allow.allows_ip(ipaddress.ip_address("10.2.3.4"), 80)
    assert allow.allows_ip(ipaddress.ip_address("::1"), 6379)
    assert allow.allows_ip(ipaddress.ip_address("::2"), 1)
    assert allow.allows_ip(ipaddress.ip_address("127.0.0.2"), 8080)
    assert not allow.allows_ip(ipaddress.ip_address("127.0.0.2"), 8081)
    assert allow.allows_ip(ipaddress.ip_address("fd00::5"), 9000)
    assert not allow.allows_ip(ipaddress.ip_address("fd00::5"), 9001)
    assert not allow.allows_ip(ipaddress.ip_address("127.0.0.3"), 80)
    assert allow.allows_name("intranet.test", 8443) and not allow.allows_name("intranet.test", 443)


def test_an_allowed_host_with_a_port_is_allowed_on_that_port_only(fake_dns):
    """Abuse case: with ``127.0.0.1:8080`` allowed, any other port on it stays refused (it used
    to be kept as a host name that never matched); a host alone still allows every port."""
    fake_dns["intranet.test"] = ["10.9.9.9"]
    check_url("http://127.0.0.1:8080/", allow_hosts=["127.0.0.1:8080"])
    check_url("http://[::1]:8080/", allow_hosts=["[::1]:8080"])
    check_url("https://intranet.test:8443/", allow_hosts=["intranet.test:8443"])
    check_url("http://intranet.test/", allow_hosts=["intranet.test:80"])
    check_url("http://127.0.0.1:6379/", allow_hosts=["127.0.0.1"])
    for url, allowed in [("http://127.0.0.1:6379/", "127.0.0.1:8080"), ("http://127.0.0.1/", "127.0.0.1:8080"),
                         ("http://[::1]:6379/", "[::1]:8080"), ("https://intranet.test/", "intranet.test:8443"),
                         ("http://127.0.0.5:8080/", "127.0.0.1:8080")]:
        with pytest.raises(SourceBlockedError):
            check_url(url, allow_hosts=[allowed])


@pytest.mark.parametrize("entry", ["127.0.0.1:0", "127.0.0.1:65536", "localhost:http", "http://127.0.0.1",
                                   "[127.0.0.1]:80", "[::1]:", "bad host", "a/b", "user@host"])
def test_malformed_allow_entries_are_refused(entry):
    """A typo is a configuration error, not an entry that silently never matches."""
    with pytest.raises(ConfigError, match="allow_hosts"):
        AllowList.parse([entry])


def test_cloud_host_agent_and_ipv6_documentation_addresses_are_refused():
    """Abuse case: Python 3.11 calls both global, yet neither is a public web server."""
    for host in ("168.63.129.16", "[3fff::1]", "[3fff:fff:ffff::1]"):
        with pytest.raises(SourceBlockedError):
            check_url(f"http://{host}/")
    assert "metadata" in blocked_reason(ipaddress.ip_address("168.63.129.16"))
    assert "3fff::/20" in blocked_reason(ipaddress.ip_address("3fff::1"))
    assert blocked_reason(ipaddress.ip_address("3fff:1000::1")) is None  # just outside the /20


def test_a_redirect_to_another_port_of_an_allowed_host_is_refused():
    """Abuse case, over real sockets: two servers on 127.0.0.1; only the first one's port is
    allowed, and its redirect to the second is refused before connecting to it."""
    with LocalServer() as allowed, LocalServer() as other:
        other.add("/secret", Response(body=b"<html><body><p>internal admin page</p></body></html>"))
        allowed.add("/hop", redirect(other.url("/secret")))
        config = FetchConfig(timeout_s=2, allow_hosts=[f"127.0.0.1:{allowed.port}"])
        with pytest.raises(SourceBlockedError, match=str(other.port)):
            fetch_source(allowed.url("/hop"), config)
        assert allowed.hits["/hop"] == 1 and other.hits["/secret"] == 0

        both = FetchConfig(timeout_s=2, allow_hosts=[f"127.0.0.1:{allowed.port}", f"127.0.0.1:{other.port}"])
        assert "internal admin page" in fetch_source(allowed.url("/hop"), both).text
        assert other.hits["/secret"] == 1


def test_blocked_reason_classes():
    assert blocked_reason(ipaddress.ip_address("8.8.8.8")) is None
    assert "metadata" in blocked_reason(ipaddress.ip_address("169.254.169.254"))
    assert "loopback" in blocked_reason(ipaddress.ip_address("127.0.0.1"))
    assert "100.64.0.0/10" in blocked_reason(ipaddress.ip_address("100.64.1.1"))
    assert "embeds" in blocked_reason(ipaddress.ip_address("::ffff:127.0.0.1"))


def test_session_checks_at_connect_time_dns_rebinding(fake_dns):
    """The name passes the check with a public address, then rebinds to loopback: the pinned
    connection re-resolves, re-checks, and refuses before opening a socket."""
    with LocalServer() as server:
        server.add("/", Response(body=b"<p>secret</p>"))
        fake_dns.answers["rebind.test"] = [["93.184.216.34"], ["127.0.0.1"]]
        url = f"http://rebind.test:{server.port}/"
        check_url(url)  # first answer: public
        with guarded_session() as session, pytest.raises(SourceBlockedError, match="127.0.0.1"):
            session.get(url, timeout=1, allow_redirects=False)
        assert server.hits["/"] == 0


def test_session_connects_to_the_checked_address(fake_dns):
    """An allow-listed name is connected through the address the guard resolved."""
    with LocalServer() as server:
        server.add("/", Response(body=b"hello", content_type="text/plain"))
        fake_dns["local.test"] = ["127.0.0.1"]
        with guarded_session(["local.test"]) as session:
            response = session.get(f"http://local.test:{server.port}/", timeout=1)
        assert response.text == "hello"
        assert server.hits["/"] == 1
        with guarded_session() as session, pytest.raises(SourceBlockedError):
            session.get(f"http://local.test:{server.port}/", timeout=1)
        assert server.hits["/"] == 1
