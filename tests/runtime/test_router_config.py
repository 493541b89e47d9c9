"""Router config files (runtime/router_config.py): the example config drives the native
router (examples/router/router.mbl) and scapy packets come out as the config says (the
expectations are read off examples/router/control.toml by hand); bad configs give
file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime.lpm import RouteTables
from npkit.runtime.neighbours import LocalAddresses, Neighbours, NextHopTable, Ports
from npkit.runtime.router_config import RouterConfig, RouterConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "router" / "control.toml"
FOR_ROUTER, FRAG_NEEDED, FRAGMENT, FOR_ROUTER6, TOO_BIG = 4, 5, 6, 21, 19


@pytest.fixture(scope="module")
def native() -> NativeProgram:
    return NativeProgram(compile_file(REPO / "examples" / "router" / "router.mbl"), "router")


def configure(native: NativeProgram, config: RouterConfig):
    for name in ("nexthops", "local4", "local6"):
        native.region(name)[:] = 0
    nexthops = NextHopTable(native.region("nexthops"), ports=4)
    neighbours = Neighbours(Ports(count=4), nexthops)
    routes = config.apply(nexthops, LocalAddresses(native.region("local4"),
                                                   native.region("local6")), neighbours)
    RouteTables.of(native).load(routes.v4, routes.v6)
    return nexthops, neighbours


@pytest.fixture(scope="module")
def example(native):
    nexthops, neighbours = configure(native, RouterConfig.load(EXAMPLE))
    return native, nexthops, neighbours


def v4(dst: str, size: int = 100, df: bool = False) -> bytes:
    pkt = IP(src="198.18.0.1", dst=dst, ttl=64, flags="DF" if df else 0) / UDP(sport=1, dport=2)
    return raw(Ether(dst="02:00:00:00:00:10", src="02:00:00:00:99:99") / pkt
               / (b"x" * (size - 28)))


def v6(dst: str, size: int = 100) -> bytes:
    pkt = IPv6(src="2001:db8:77::9", dst=dst, hlim=64) / UDP(sport=1, dport=2)
    return raw(Ether(dst="02:00:00:00:00:10", src="02:00:00:00:99:99") / pkt
               / (b"x" * (size - 48)))


# destination -> (port, dmac, smac), from the [[port]], [[neighbour]] and [[route]] tables
FORWARDED = {
    "10.1.2.3": (2, "02:00:00:00:12:02", "02:00:00:00:00:12"),       # 10/8 via 203.0.113.2
    "8.8.8.8": (1, "02:00:00:00:11:02", "02:00:00:00:00:11"),        # default route
    "172.16.5.5": (3, "02:00:00:00:13:02", "02:00:00:00:00:13"),     # via 192.0.2.130
    "192.0.2.2": (0, "02:00:00:00:10:02", "02:00:00:00:00:10"),      # a neighbour
    "203.0.113.2": (2, "02:00:00:00:12:02", "02:00:00:00:00:12"),
    "2001:db8:100::1": (2, "02:00:00:00:12:02", "02:00:00:00:00:12"),  # via fe80::12:2
    "2001:db8:0:99::5": (2, "02:00:00:00:12:05", "02:00:00:00:00:12"),  # connected prefix
    "2001:db8:ffff::1": (1, "02:00:00:00:11:02", "02:00:00:00:00:11"),  # ::/0
}


@pytest.mark.parametrize("dst", FORWARDED)
def test_example_config_forwards(example, dst):
    native = example[0]
    port, dmac, smac = FORWARDED[dst]
    (got,) = native.run([v6(dst) if ":" in dst else v4(dst)])
    assert (got.kind, got.port) == ("forward", port), got
    out = Ether(got.data)
    assert (out.dst, out.src) == (dmac, smac)


@pytest.mark.parametrize("dst, code", [
    ("192.0.2.1", FOR_ROUTER), ("192.0.2.129", FOR_ROUTER), ("198.51.100.1", FOR_ROUTER),
    ("203.0.113.1", FOR_ROUTER), ("2001:db8:0:10::1", FOR_ROUTER6),
    ("2001:db8:0:13::1", FOR_ROUTER6)])
def test_example_router_addresses_are_local(example, dst, code):
    (got,) = example[0].run([v6(dst) if ":" in dst else v4(dst)])
    assert (got.kind, got.code) == ("exception", code)


def test_example_mtus(example):
    native, nexthops, _ = example
    fits, too_big = native.run([v4("172.16.5.5", 1280, df=True), v4("172.16.5.5", 1281, df=True)])
    assert fits.kind == "forward" and (too_big.kind, too_big.code) == ("exception", FRAG_NEEDED)
    assert nexthops.get(too_big.next_hop).mtu == 1280  # port 3
    (jumbo,) = native.run([v4("8.8.8.8", 9000, df=True)])  # port 1 carries 9000 bytes
    assert (jumbo.kind, jumbo.port) == ("forward", 1)
    (v6_big,) = native.run([v6("2001:db8:100::1", 1501)])
    assert (v6_big.kind, v6_big.code) == ("exception", TOO_BIG)


@pytest.mark.parametrize("dst, port", [("192.0.2.50", 0), ("198.51.100.77", 1),
                                       ("2001:db8:0:99::6", 2), ("2001:db8:0:13::9", 3)])
def test_unresolved_hosts_on_connected_prefixes_go_to_the_slow_path(example, dst, port):
    """Not to the default route: the connected prefix points at the port's glean next hop
    (MTU 0), so the packet is an exception naming it."""
    native, nexthops, neighbours = example
    (got,) = native.run([v6(dst) if ":" in dst else v4(dst)])
    assert got.kind == "exception" and got.code in (FRAG_NEEDED, FRAGMENT, TOO_BIG)
    record = nexthops.get(got.next_hop)
    assert neighbours.is_glean(got.next_hop) and (record.port, record.mtu) == (port, 0)


def test_example_icmp_settings_are_kept():
    assert RouterConfig.load(EXAMPLE).icmp == {"rate": 100, "burst": 10}


PORTS = """\
[[port]]
port = 0
mac = "02:00:00:00:00:10"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8:0:10::1/64"]

[[port]]
port = 1
mac = "02:00:00:00:00:11"
ipv4 = ["198.51.100.1/24"]
"""
GATEWAY = """
[[neighbour]]
port = 1
ip = "198.51.100.2"
mac = "02:00:00:00:11:02"
"""


def test_route_file_with_explicit_next_hops(native, tmp_path):
    (tmp_path / "table.txt").write_text("10.0.0.0/8 7\n2001:db8:5::/48 7\n")
    path = tmp_path / "r.toml"
    path.write_text('routes = "table.txt"\n' + PORTS + GATEWAY
                    + '[[nexthop]]\nindex = 7\nport = 1\nvia = "198.51.100.2"\n')
    nexthops, _ = configure(native, RouterConfig.load(path))
    assert nexthops.get(7).port == 1
    for frame in (v4("10.9.9.9"), v6("2001:db8:5::1")):
        (got,) = native.run([frame])
        assert (got.kind, got.port, Ether(got.data).dst) == ("forward", 1, "02:00:00:00:11:02")


def where(tmp_path: Path, text: str, routes: str | None = None) -> tuple[Path, str]:
    if routes is not None:
        (tmp_path / "table.txt").write_text(routes)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RouterConfigError) as info:
        RouterConfig.load(path)
    return path, str(info.value)


# (config text, line of the error, words of the message)
BAD = [
    ('[[port]]\nport = 0\nmac = "02:00:00\n', 3, "TOML syntax"),
    (PORTS + "speed = 10\n", 11, "unknown key 'speed'"),
    (PORTS.replace('"02:00:00:00:00:11"', '"02:00:00:00:11"'), 9, "six hex bytes"),
    (PORTS.replace('"02:00:00:00:00:11"', '"01:00:00:00:00:11"'), 7, "multicast"),
    (PORTS.replace("port = 1", "port = 0"), 8, "already configured at line 1"),
    (PORTS.replace("port = 1", "port = 16"), 7, "port 16 out of range 0..15"),   # port_table
    (PORTS.replace('"198.51.100.1/24"', '"198.51.100.1"'), 10, "prefix length"),
    (PORTS.replace('ipv6 = ["2001:db8:0:10::1/64"]',
                   'ipv6 = ["2001:db8:0:10::1/64"]\nmtu = 1000'), 1, "IPv6 minimum 1280"),
    (PORTS + GATEWAY.replace("198.51.100.2", "192.0.2.2"), 12, "not on a subnet of port 1"),
    (PORTS + GATEWAY.replace("port = 1", "port = 5"), 12, "port 5 is not configured"),
    (PORTS + GATEWAY.replace("198.51.100.2", "198.51.100.1"), 12, "router's own addresses"),
    (PORTS + GATEWAY + GATEWAY, 19, "already given at line 12"),
    (PORTS + '[[route]]\nprefix = "10.0.0.0/8"\nvia = "198.51.100.9"\n', 11,
     'no [[neighbour]] with ip = "198.51.100.9" on port 1'),
    (PORTS + '[[route]]\nprefix = "10.0.0.0/8"\nvia = "100.64.0.1"\n', 11, "on no port"),
    (PORTS + '[[route]]\nprefix = "10.0.0.0/8"\n', 11, "give via ="),
    (PORTS + '[[route]]\nprefix = "10.0.0.1/8"\nport = 1\n', 12, "host bits set"),
    (PORTS + '[[route]]\nprefix = "10.0.0.0/8"\nvia = "2001:db8::2"\n', 13,
     "IPv4 gateway"),
    (PORTS + GATEWAY + '[[route]]\nprefix = "10.0.0.0/8"\nvia = "198.51.100.2"\n' * 2,
     19, "already given at line 16"),
    (PORTS + "[routing]\nx = 1\n", 11, "unknown table or key 'routing'"),
    (PORTS.replace('"192.0.2.1/24"', ", ".join(f'"192.0.2.{n}/24"' for n in range(1, 18))),
     1, "local4 table is full"),
    (PORTS + "[icmp]\nrate = [1, 2]\n", 12, "rate must be a number"),
    ('routes = "table.txt"\n' + PORTS + GATEWAY +
     '[[nexthop]]\nindex = 1\nport = 1\nvia = "198.51.100.2"\n', 1,
     "names next hops 4 that no [[nexthop]] defines"),
]


@pytest.mark.parametrize("text, line, message", BAD)
def test_config_errors_name_file_and_line(tmp_path, text, line, message):
    path, error = where(tmp_path, text, "10.0.0.0/8 1\n11.0.0.0/8 4\n")
    assert error.startswith(f"{path}:{line}:"), error
    assert message in error


def test_route_file_errors_name_both_files(tmp_path):
    text = 'routes = { file = "table.txt", seed = 1 }\n' + PORTS
    path, error = where(tmp_path, text, "10.0.0.0/8 1\nnot-a-prefix 2\n")
    assert error.startswith(f"{path}:1: routes: {tmp_path / 'table.txt'}:2:"), error


def test_missing_config_file(tmp_path):
    with pytest.raises(RouterConfigError, match="cannot read router config .*nope.toml"):
        RouterConfig.load(tmp_path / "nope.toml")


def test_program_with_fewer_ports(native, tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(PORTS.replace("port = 1", "port = 6"))
    config = RouterConfig.load(path)  # fine for the default-size tables
    with pytest.raises(RouterConfigError, match=f"^{path}:7: .*port 6 out of range 0..3"):
        configure(native, config)
