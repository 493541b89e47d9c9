"""The native target against independent references (scapy, zlib, Python models)."""

from __future__ import annotations

import ipaddress
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Ether, raw
from scapy.utils import checksum as scapy_checksum


def _eth(**kw) -> Ether:
    return Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", **kw)


# ---- the IPv4 TTL block vs a reference written with scapy --------------------------------

ROUTES = [("10.0.0.0", 8, 1), ("10.1.0.0", 16, 2), ("10.1.2.0", 24, 3), ("192.168.0.0", 16, 4),
          ("0.0.0.0", 1, 5)]


def reference_lpm(dst: str) -> int | None:
    """Brute-force longest prefix match over ROUTES."""
    best = None
    for prefix, plen, port in ROUTES:
        if ipaddress.ip_address(dst) in ipaddress.ip_network(f"{prefix}/{plen}"):
            if best is None or plen > best[0]:
                best = (plen, port)
    return None if best is None else best[1]


def reference_ipv4(frame: bytes) -> tuple:
    """What tests/mbl/programs/ipv4_ttl.mbl must do, written independently with scapy."""
    if len(frame) < 14:
        return ("drop", "runt")
    eth = Ether(frame)
    if eth.type != 0x0800:
        return ("drop", "not_ipv4")
    if len(frame) < 34:
        return ("drop", "runt")
    hdr = frame[14:34]
    if hdr[0] >> 4 != 4:
        return ("drop", "bad_version")
    if hdr[0] & 15 < 5:
        return ("drop", "bad_ihl")
    if hdr[0] & 15 != 5:
        return ("exception", 3)
    if scapy_checksum(hdr) != 0:
        return ("drop", "bad_checksum")
    src, dst = ipaddress.ip_address(hdr[12:16]), ipaddress.ip_address(hdr[16:20])
    if any(a.packed[0] in (0, 127) or a.packed[0] >= 240 for a in (src, dst)):
        return ("drop", "martian")
    if hdr[8] <= 1:
        return ("exception", 1)
    port = reference_lpm(str(dst))
    if port is None:
        return ("exception", 2)
    out = Ether(frame)
    out[IP].ttl -= 1
    del out[IP].chksum  # scapy recomputes the full checksum: independent of RFC 1624
    return ("forward", port, raw(out))


def run_ipv4(native, frames: list[bytes]) -> list[tuple]:
    out = []
    for v in native.run(frames, in_ports=0):
        if v.kind == "forward":
            out.append(("forward", v.port, v.data))
        elif v.kind == "drop":
            out.append(("drop", v.reason))
        else:
            out.append((v.kind, v.code))
    return out


def _load_routes(native) -> None:
    if native.read("fib4", 0) == 0:
        for prefix, plen, port in ROUTES:
            native.table_add("fib4", int(ipaddress.ip_address(prefix)), port, plen)


def test_ipv4_ttl_forwards_and_decrements(ipv4_ttl):
    _load_routes(ipv4_ttl)
    frame = raw(_eth() / IP(src="1.2.3.4", dst="10.1.2.9", ttl=64) / UDP() / (b"x" * 20))
    (got,) = run_ipv4(ipv4_ttl, [frame])
    assert got == reference_ipv4(frame)
    assert Ether(got[2])[IP].ttl == 63


def test_ipv4_ttl_named_outcomes(ipv4_ttl):
    _load_routes(ipv4_ttl)
    good = _eth() / IP(src="1.2.3.4", dst="10.9.9.9", ttl=9) / TCP()
    cases = {
        "runt": raw(good)[:20],
        "not_ipv4": raw(Ether(type=0x86DD) / (b"\0" * 40)),
        "bad_checksum": raw(good)[:24] + b"\x00\x00" + raw(good)[26:],
        "martian_src": raw(_eth() / IP(src="127.0.0.1", dst="10.0.0.1") / UDP()),
        "ttl_expired": raw(_eth() / IP(src="1.2.3.4", dst="10.0.0.1", ttl=1) / UDP()),
        "no_route": raw(_eth() / IP(src="1.2.3.4", dst="200.0.0.1") / UDP()),
        "options": raw(_eth() / IP(src="1.2.3.4", dst="10.0.0.1", options=b"\x01" * 4)),
    }
    got = dict(zip(cases, run_ipv4(ipv4_ttl, list(cases.values())), strict=True))
    assert got["runt"] == ("drop", "runt")
    assert got["not_ipv4"] == ("drop", "not_ipv4")
    assert got["bad_checksum"] == ("drop", "bad_checksum")
    assert got["martian_src"] == ("drop", "martian")
    assert got["ttl_expired"] == ("exception", 1)
    assert got["no_route"] == ("exception", 2)
    assert got["options"] == ("exception", 3)


frames = st.builds(
    lambda src, dst, ttl, ihl_opts, payload, cut, flip: _frame(src, dst, ttl, ihl_opts,
                                                               payload, cut, flip),
    st.sampled_from(["1.2.3.4", "127.0.0.1", "0.1.2.3", "250.0.0.1", "8.8.8.8"]),
    st.one_of(st.sampled_from(["10.1.2.3", "10.1.9.9", "10.7.7.7", "192.168.1.1",
                               "200.1.1.1", "127.0.0.2", "100.64.0.1"]),
              st.integers(0, 2**32 - 1).map(lambda x: str(ipaddress.ip_address(x)))),
    st.integers(0, 255), st.booleans(), st.binary(max_size=40),
    st.one_of(st.none(), st.integers(0, 60)), st.one_of(st.none(), st.integers(0, 33)))


def _frame(src, dst, ttl, opts, payload, cut, flip) -> bytes:
    pkt = _eth() / IP(src=src, dst=dst, ttl=ttl, options=b"\x01" * 4 if opts else b"")
    data = bytearray(raw(pkt / UDP() / payload))
    if flip is not None and flip < len(data):
        data[flip] ^= 0x5A
    return bytes(data if cut is None else data[:cut])


@settings(max_examples=300, deadline=None)
@given(st.lists(frames, min_size=1, max_size=20))
def test_ipv4_ttl_matches_reference(ipv4_ttl, batch):
    _load_routes(ipv4_ttl)
    assert run_ipv4(ipv4_ttl, batch) == [reference_ipv4(f) for f in batch]


# ---- L2 bridge ---------------------------------------------------------------------------

def test_l2_bridge(l2_bridge):
    for port in range(16):
        l2_bridge.write("port_pair", port, port ^ 1)
    l2_bridge.table_add("mac_table", 0x020000000001, 5)
    known = raw(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:09") / b"hello")
    unknown = raw(Ether(dst="02:00:00:00:00:02") / b"hello")
    bcast = raw(Ether(dst="ff:ff:ff:ff:ff:ff") / b"hello")
    v = l2_bridge.run([known, unknown, bcast, b"\x01\x02", known], in_ports=[2, 2, 6, 0, 5])
    assert [(x.kind, x.port, x.reason) for x in v] == [
        ("forward", 5, ""), ("forward", 3, ""), ("forward", 7, ""), ("drop", 0, "runt"),
        ("drop", 0, "same_port")]
    assert v[0].data == known  # a bridge does not rewrite
    assert l2_bridge.read("rx_frames", 2) == 2


# ---- arithmetic semantics vs a Python model ----------------------------------------------

ARITH = """
array out : bit<WIDTH> [8] in sram;
array inp : bit<WIDTH> [2] in sram;
block b {
    let a = inp[0];
    let c = inp[1];
    out[0] = a + c;
    out[1] = a - c;
    out[2] = a * c;
    out[3] = ~a ^ c;
    out[4] = a << (c & 0xff);
    out[5] = a >> (c & 0xff);
    out[6] = -a;
    if a < c { out[7] = 1; } else { out[7] = 2; }
    drop(done);
}
"""


def _arith_model(a: int, c: int, w: int) -> list[int]:
    m = (1 << w) - 1
    s = c & 0xFF
    return [(a + c) & m, (a - c) & m, (a * c) & m, (~a ^ c) & m,
            (a << s) & m if s < w else 0, a >> s if s < w else 0, -a & m, 1 if a < c else 2]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_wrapping_arithmetic(native_from, data):
    width = data.draw(st.sampled_from([8, 16, 32, 48, 64, 128]))
    native = _arith_program(native_from, width)
    a = data.draw(st.integers(0, (1 << width) - 1))
    c = data.draw(st.integers(0, (1 << width) - 1))
    native.write("inp", 0, a)
    native.write("inp", 1, c)
    native.run([b"\0"])
    assert [native.read("out", i) for i in range(8)] == _arith_model(a, c, width)


_ARITH_CACHE: dict[int, object] = {}


def _arith_program(native_from, width: int):
    if width not in _ARITH_CACHE:
        _ARITH_CACHE[width] = native_from(ARITH.replace("WIDTH", str(width)))
    return _ARITH_CACHE[width]


def test_casts_slices_and_struct_arrays(native_from):
    native = native_from("""
    struct nh_t { mac: bit<48>; port: bit<16>; flags: bit<4>; }
    array nh : nh_t [4] in sram;
    register r : bit<32> [4] in local;
    array out : bit<64> [8] in scratch;
    block b {
        let e = nh[1];
        out[0] = e.mac as bit<64>;
        out[1] = (e.port as bit<8>) as bit<64>;
        out[2] = e.mac[47:40] as bit<64>;
        out[3] = (e.flags as bit<64>) << 60;
        e.port = 0xbeef;
        out[4] = r.add(2, 7) as bit<64>;
        out[5] = r[2] as bit<64>;
        out[6] = nh[5].port as bit<64>;     // index 5 wraps to 1 (size 4)
        drop(done);
    }""")
    native.write("nh", 1, {"mac": 0x0A0B0C0D0E0F, "port": 0x1234, "flags": 0xF})
    native.write("r", 2, 5)
    native.run([b"\0"])
    got = [native.read("out", i) for i in range(7)]
    assert got == [0x0A0B0C0D0E0F, 0x34, 0x0A, 0xF << 60, 5, 12, 0xBEEF]
    # words MSB first: mac(48) port(16) | flags(4) then padding
    assert native.read("nh", 1) == (0x0A0B0C0D0E0F << 48 | 0xBEEF << 32 | 0xF << 28)


# ---- intrinsics ---------------------------------------------------------------------------

def _toeplitz(data: bytes, key: bytes) -> int:
    """Reference Toeplitz hash (Microsoft RSS spec)."""
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    result = 0
    for i in range(len(data) * 8):
        if data[i // 8] >> (7 - i % 8) & 1:
            result ^= (k >> (kbits - 32 - i)) & 0xFFFFFFFF
    return result


RSS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")


def test_intrinsics_against_references(native_from):
    native = native_from("""
    import "std/headers.mbl";
    array out : bit<32> [4] in sram;
    block b {
        let ip = packet<ipv4_t>(0) else drop(runt);
        let l4 = packet<udp_t>(20) else drop(runt);
        out[0] = crc32(ip.src, ip.dst) ;
        out[1] = toeplitz(ip.src, ip.dst, l4.src_port, l4.dst_port);
        out[2] = csum(ip) as bit<32>;
        out[3] = csum_update(0x1234, 0xff00, 0x0000) as bit<32>;
        forward(0);
    }""")
    pkt = raw(IP(src="66.9.149.187", dst="161.142.100.80") / UDP(sport=2794, dport=1766))
    native.run([pkt])
    addrs = pkt[12:20]
    assert native.read("out", 0) == zlib.crc32(addrs)
    # Microsoft RSS verification suite: 66.9.149.187:2794 -> 161.142.100.80:1766 = 0x51ccc178
    assert native.read("out", 1) == 0x51CCC178 == _toeplitz(addrs + pkt[20:24], RSS_KEY)
    assert native.read("out", 2) == 0  # a correct header sums to 0xffff
    # RFC 1624: HC' = ~(~HC + ~m + m'), computed by hand: ~0x1234=0xedcb, ~0xff00=0x00ff
    assert native.read("out", 3) == (~(0xEDCB + 0x00FF + 0x0000) & 0xFFFF)


def test_lpm_longest_match_and_hash_exact(native_from):
    native = native_from("""
    table t6 : lpm(bit<128>) -> bit<16> [16];
    table h : hash(bit<48>) -> bit<8> [16];
    array keys : bit<128> [2] in sram;
    array out : bit<32> [2] in sram;
    block b {
        let k = keys[0];
        let p = t6.lookup(k) else drop(miss6);
        out[0] = p as bit<32>;
        let v = h.lookup(keys[1] as bit<48>) else drop(miss);
        out[1] = v as bit<32>;
        forward(0);
    }""")
    nets = [("2001:db8::/32", 1), ("2001:db8:1::/48", 2), ("::/0", 3)]
    for net, port in nets:
        n = ipaddress.ip_network(net)
        native.table_add("t6", int(n.network_address), port, n.prefixlen)
    native.table_add("h", 0xAABBCCDDEEFF, 9)
    for addr in ("2001:db8:1::5", "2001:db8:2::5", "fe80::1"):
        native.write("keys", 0, int(ipaddress.ip_address(addr)))
        native.write("keys", 1, 0xAABBCCDDEEFF)
        (v,) = native.run([b"\0"])
        want = max((ipaddress.ip_network(n).prefixlen, p) for n, p in nets
                   if ipaddress.ip_address(addr) in ipaddress.ip_network(n))[1]
        assert (v.kind, native.read("out", 0), native.read("out", 1)) == ("forward", want, 9)
    native.write("keys", 1, 0xAABBCCDDEEFE)
    (v,) = native.run([b"\0"])
    assert (v.kind, v.reason) == ("drop", "miss")


def test_functions_loops_and_verdict_kinds(native_from):
    """Header parameters, var/for, enums, next(label) and forward with a queue."""
    native = native_from("""
    import "std/headers.mbl";
    enum Lbl : bit<8> { a = 7 }
    fn ones(ip: ipv4_t) -> bit<8> {            // popcount of the TTL by a bounded loop
        var n: bit<8> = 0;
        for i in 0..8 {
            if ((ip.ttl >> (i as bit<8>)) & 1) == 1 { n += 1; }
        }
        return n;
    }
    block b {
        let ip = packet<ipv4_t>(0) else drop(short);
        let n = ones(ip);
        if n == 0 { next(zero_ttl); }
        if n >= 7 { exception(Lbl.a as bit<32> + 0x100); }
        meta.flow_id = 5;
        forward(n as bit<16>, meta.flow_id as bit<16>);
    }""")
    pkts = [raw(IP(ttl=ttl)) for ttl in (0, 0b1011, 0xFF)] + [b"\x45"]
    v = native.run(pkts)
    assert (v[0].kind, v[0].reason) == ("next", "zero_ttl")
    assert (v[1].kind, v[1].port, v[1].queue) == ("forward", 3, 5)
    assert (v[2].kind, v[2].code) == ("exception", 0x107)
    assert (v[3].kind, v[3].reason) == ("drop", "short")


def test_checked_view_at_variable_offset(native_from):
    """packet<h>(off) with a computed offset: in bounds exactly up to the last byte."""
    native = native_from("""
    import "std/headers.mbl";
    block b {
        let ip = packet<ipv4_t>(0) else drop(short);
        let l4 = packet<udp_t>((ip.ihl as bit<32>) * 4) else drop(no_l4);
        l4.checksum = 0xabcd;
        forward(l4.dst_port);
    }""")
    with_opts = raw(IP(options=b"\x01" * 8) / UDP(dport=53))
    v = native.run([with_opts, with_opts[:35], with_opts[:36]])
    assert (v[0].kind, v[0].port) == ("forward", 53)
    assert IP(v[0].data)[UDP].chksum == 0xABCD
    assert (v[1].kind, v[1].reason) == ("drop", "no_l4")  # 28 + 8 = 36 bytes needed
    assert v[2].kind == "forward"


def test_eth_to_pos_encapsulation(native_from):
    """packet.pull/push: Ethernet frames become PPP/HDLC frames (RFC 1662 header)."""
    from pathlib import Path

    from scapy.all import IPv6

    from npkit.compiler.mbl import NativeProgram, compile_file

    repo = Path(__file__).resolve().parents[2]
    native = NativeProgram(compile_file(repo / "microblocks" / "eth_to_pos.mbl"), "eth_to_pos")
    native.write("pos_port", 3, 1)
    v4 = _eth() / IP(src="1.2.3.4", dst="5.6.7.8") / UDP() / b"payload"
    v6 = _eth() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP()
    arp = _eth(type=0x0806) / (b"\0" * 28)
    out = native.run([raw(v4), raw(v6), raw(arp), raw(v4)[:10]], in_ports=3)
    assert (out[0].kind, out[0].port) == ("forward", 1)
    assert out[0].data == b"\xff\x03\x00\x21" + raw(v4[IP])
    assert out[1].data == b"\xff\x03\x00\x57" + raw(v6[IPv6])
    assert (out[2].kind, out[2].code) == ("exception", 0x303)
    assert (out[3].kind, out[3].reason) == ("drop", "runt")


def test_push_beyond_headroom_and_pull_beyond_length(native_from):
    native = native_from("""
    block b {
        packet.pull(meta.len as bit<32>) else drop(never);   // strip everything: allowed
        packet.pull(1) else drop(empty);
        forward(0);
    }
    block c {
        packet.push(60) else drop(first);
        packet.push(8) else drop(no_room);                    // 64 bytes of headroom
        forward(0);
    }""")
    (v,) = native.run([b"abc"])
    assert (v.kind, v.reason, v.data) == ("drop", "empty", b"")
    from npkit.compiler.mbl import NativeProgram

    c = NativeProgram(native.program, "c")
    (v,) = c.run([b"abc"])
    assert (v.kind, v.reason, len(v.data)) == ("drop", "no_room", 63)


PIPELINE = """
import "std/headers.mbl";
counter seen [4] in scratch;
block classify {
    let eth = packet<ethernet_t>(0) else drop(runt);
    seen.count(0);
    if eth.ethertype == ETHERTYPE_IPV4 { next(ipv4); }
    if eth.ethertype == ETHERTYPE_IPV6 { next(ipv6); }
    drop(other);
}
block v4 { seen.count(1); next; }
block v6 { seen.count(2); forward(6); }
block tx { seen.count(3); forward(4); }
pipeline p {
    ports 0..1;
    stage rx = classify on me(0);
    stage a = v4;
    stage b = v6;
    stage out = tx;
    rx.ipv4 -> a -> out;
    rx.ipv6 -> b;
}
"""


def test_pipeline_follows_next_labels(native_from):
    from scapy.all import IPv6

    native = native_from(PIPELINE, "p")
    frames = [raw(_eth() / IP() / UDP()), raw(_eth() / IPv6() / UDP()),
              raw(_eth(type=0x0806) / (b"\0" * 28)), b"\0" * 4]
    v = native.run(frames)
    assert [(x.kind, x.port, x.reason) for x in v] == [
        ("forward", 4, ""), ("forward", 6, ""), ("drop", 0, "other"), ("drop", 0, "runt")]
    assert [native.read("seen", i) for i in range(4)] == [3, 1, 1, 1]


def clmul_mod(key: int, mult: int, poly: int, width: int) -> int:
    """The hash unit from its definition in docs/sim-core.md: the carry-less product
    key (x) mult, then reduced by long division modulo x^width + poly."""
    product = 0
    for i in range(width):
        if key >> i & 1:
            product ^= mult << i
    modulus = (1 << width) | poly
    for bit in range(2 * width - 2, width - 1, -1):
        if product >> bit & 1:
            product ^= modulus << (bit - width)
    return product


HASH_PROGRAM = """
header keys_t { k48: bit<48>; k64: bit<64>; k128: bit<128>; }
block b {
    let k = packet<keys_t>(0) else drop(short);
    k.k48 = hash48(k.k48);
    k.k64 = hash64(k.k64);
    k.k128 = hash128(k.k128);
    forward(0);
}
"""
# docs/sim-core.md "Hash function": the defaults, typed here from the document
DOC_DEFAULTS = {48: (0x291, 0x9E3779B97F4A), 64: (0x42F0E1EBA9EA3693, 0x9E3779B97F4A7C15),
                128: (0x87, 0x9E3779B97F4A7C15F39CC0605CEDC835)}


def _hashed(native, keys: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    frames = [k48.to_bytes(6, "big") + k64.to_bytes(8, "big") + k128.to_bytes(16, "big")
              for k48, k64, k128 in keys]
    out = []
    for v in native.run(frames):
        assert v.kind == "forward"
        out.append((int.from_bytes(v.data[:6], "big"), int.from_bytes(v.data[6:14], "big"),
                    int.from_bytes(v.data[14:30], "big")))
    return out


key_triples = st.tuples(st.integers(0, 2**48 - 1), st.integers(0, 2**64 - 1),
                        st.integers(0, 2**128 - 1))


@pytest.fixture(scope="module")
def hash_native(native_from):
    return native_from(HASH_PROGRAM)


@settings(max_examples=40, deadline=None)
@given(st.lists(key_triples, min_size=1, max_size=8))
def test_hash_unit_matches_the_documented_function(hash_native, keys):
    native = hash_native
    expected = [tuple(clmul_mod(k, DOC_DEFAULTS[w][1], DOC_DEFAULTS[w][0], w)
                      for k, w in zip(triple, (48, 64, 128), strict=True)) for triple in keys]
    assert _hashed(native, keys) == expected


def test_hash_unit_takes_the_chip_configs_parameters():
    from npkit.compiler.mbl import HashUnit, NativeProgram, compile_source

    section = {"polynomial_48": 0x1B, "multiplier_64": 0x1234_5678_9ABC_DEF1,
               "multiplier_128": 3}
    native = NativeProgram(compile_source(HASH_PROGRAM, "t.mbl"), "b",
                           HashUnit.from_config(section))
    keys = [(0x8000_0000_0001, 2**64 - 1, 2**127 + 5), (1, 1, 1)]
    expected = [(clmul_mod(a, DOC_DEFAULTS[48][1], 0x1B, 48),
                 clmul_mod(b, 0x1234_5678_9ABC_DEF1, DOC_DEFAULTS[64][0], 64),
                 clmul_mod(c, 3, DOC_DEFAULTS[128][0], 128)) for a, b, c in keys]
    assert _hashed(native, keys) == expected
    assert expected[1] == (DOC_DEFAULTS[48][1], 0x1234_5678_9ABC_DEF1, 3)  # K = 1: H = M


def test_edge_cases_bool_vars_odd_headers_wide_shift_and_lookup_in_function(native_from):
    native = native_from("""
    header tiny_t { a: bit<8>; b: bit<8>; c: bit<8>; }
    table t : hash(bit<8>) -> bit<8> [4];
    array out : bit<32> [8];
    fn g(k: bit<8>) -> bit<8> { let v = t.lookup(k) else return 0; return v; }
    block b {
        let x: bool = true;
        var y: bool = meta.len == 3;
        y = !y || x;
        let h = packet<tiny_t>(0) else drop(r);
        out[0] = csum(h) as bit<32>;          // odd length: last byte is the high half
        out[1] = crc32(h.a);
        let big: bit<128> = 200;
        out[2] = (h.a >> big) as bit<32>;     // shift beyond the width: 0
        out[3] = h.a[7:0] as bit<32>;
        out[4] = g(h.b) as bit<32>;
        out[5] = g(h.c) as bit<32>;           // miss: the function returns 0
        if y == x { out[6] = 1; }
        exception(out[1]);
    }""")
    native.table_add("t", 2, 9)
    (v,) = native.run([bytes([1, 2, 3])])
    assert (v.kind, v.code) == ("exception", zlib.crc32(b"\x01"))
    got = [native.read("out", i) for i in range(7)]
    assert got == [~(0x0102 + 0x0300) & 0xFFFF, zlib.crc32(b"\x01"), 0, 1, 9, 0, 1]


STD_HEADERS_PROGRAM = """
import "std/headers.mbl";
array out : bit<32> [16] in scratch;
counter by_vid [4] in local;
counter frames [4] in sram;
block b {
    let vlan = packet<vlan_t>(14) else drop(runt);
    out[0] = vlan.pcp as bit<32>;
    out[1] = vlan.dei as bit<32>;
    out[2] = vlan.vid as bit<32>;
    by_vid.add(meta.in_port, vlan.vid as bit<32>);
    frames.count(3);
    if vlan.ethertype == ETHERTYPE_IPV4 {
        let ip = packet<ipv4_t>(18) else drop(runt);
        if ip.protocol == IPPROTO_TCP {
            let tcp = packet<tcp_t>(38) else drop(runt);
            out[3] = tcp.src_port as bit<32> << 16 | tcp.dst_port as bit<32>;
            out[4] = tcp.seq;
            out[5] = tcp.ack;
            out[6] = tcp.data_offset as bit<32> << 24 | tcp.flags as bit<32> << 16
                     | tcp.window as bit<32>;
            out[7] = tcp.checksum as bit<32> << 16 | tcp.urgent as bit<32>;
            forward(1);
        }
        let icmp = packet<icmp_t>(38) else drop(runt);
        out[3] = icmp.type as bit<32> << 24 | icmp.code as bit<32> << 16
                 | icmp.checksum as bit<32>;
        out[4] = icmp.rest;
        forward(2);
    }
    let ip6 = packet<ipv6_t>(18) else drop(runt);
    out[3] = ip6.traffic_class as bit<32> << 20 | ip6.flow_label as bit<32>;
    let icmp6 = packet<icmpv6_t>(58) else drop(runt);
    out[4] = icmp6.type as bit<32> << 24 | icmp6.code as bit<32> << 16
             | icmp6.checksum as bit<32>;
    out[5] = icmp6.rest;
    forward(3);
}
"""


def test_standard_headers_match_scapy_and_counters_add(native_from):
    """vlan_t, tcp_t, icmp_t, ipv6_t and icmpv6_t fields read as scapy builds them; counters
    in local memory and SRAM add atomically."""
    from scapy.all import ICMP, Dot1Q, IPv6
    from scapy.layers.inet6 import ICMPv6EchoRequest

    native = native_from(STD_HEADERS_PROGRAM)

    def fields(frame: bytes, port: int) -> tuple[int, list[int]]:
        (v,) = native.run([frame], in_ports=port)
        return v.port, [native.read("out", i) for i in range(6)]

    vlan = Dot1Q(prio=5, dei=1, vlan=0xABC)
    tcp = TCP(sport=1234, dport=80, seq=0xDEADBEEF, ack=0x01020304, dataofs=6, flags="SA",
              window=0x4321, urgptr=0x55AA, options=[("NOP", None)] * 4)
    frame = raw(_eth() / vlan / IP(src="1.2.3.4", dst="5.6.7.8") / tcp)
    parsed = Ether(frame)[TCP]
    port, out = fields(frame, 1)
    assert port == 1
    assert out == [5, 1, 0xABC, 1234 << 16 | 80, 0xDEADBEEF,
                   0x01020304] and native.read("out", 6) == (6 << 24 | 0x12 << 16 | 0x4321)
    assert native.read("out", 7) == parsed.chksum << 16 | 0x55AA
    frame = raw(_eth() / Dot1Q(vlan=7) / IP() / ICMP(type=8, code=0, id=0x1122, seq=0x3344))
    port, out = fields(frame, 2)
    assert (port, out[2], out[3], out[4]) == (2, 7, 8 << 24 | Ether(frame)[ICMP].chksum,
                                              0x11223344)
    frame = raw(_eth() / Dot1Q(vlan=9) / IPv6(tc=0xB5, fl=0xFEDCB)
                / ICMPv6EchoRequest(id=0x99, seq=0x77))
    port, out = fields(frame, 1)
    icmp6 = Ether(frame)[ICMPv6EchoRequest]
    assert (port, out[3], out[4], out[5]) == (3, 0xB5 << 20 | 0xFEDCB,
                                              128 << 24 | icmp6.cksum, 0x99 << 16 | 0x77)
    assert [native.read("by_vid", i) for i in range(3)] == [0, 0xABC + 9, 7]
    assert native.read("frames", 3) == 3
    (v,) = native.run([frame[:17]])
    assert (v.kind, v.reason) == ("drop", "runt")


def test_constant_expressions_fold_with_run_time_semantics(native_from):
    """Constants built from constants and enum members fold (wrap modulo 2^N, shifts >= N
    give 0, casts truncate/extend) and give the same values the same code computes at run
    time from memory."""
    native = native_from("""
    enum E : bit<8> { big = 200 }
    const B: bit<8> = 100;
    const SUM: bit<8> = B + E.big;                        // 300 wraps to 44
    const WIDE: bit<16> = (SUM as bit<16>) << 8 | ~(B as bit<16>);
    const NEG: bit<8> = -B;
    const GONE: bit<8> = B << 9;
    const SIZE: bit<32> = 1 << 2;
    array inp : bit<8> [2];
    array out : bit<16> [SIZE * 2];
    block b {
        let b8 = inp[0];
        let big = inp[1];
        out[0] = SUM as bit<16>;
        out[1] = WIDE;
        out[2] = NEG as bit<16>;
        out[3] = GONE as bit<16>;
        out[4] = (b8 + big) as bit<16>;
        out[5] = ((b8 + big) as bit<16>) << 8 | ~(b8 as bit<16>);
        out[6] = (-b8) as bit<16>;
        out[7] = (b8 << (9 as bit<8>)) as bit<16>;
        forward(0);
    }""")
    native.write("inp", 0, 100)
    native.write("inp", 1, 200)
    native.run([b"\0"])
    want = [44, 44 << 8 | (~100 & 0xFFFF), 256 - 100, 0]
    assert [native.read("out", i) for i in range(8)] == want + want


# ---- exact-match (hash) tables: open addressing against a dict model ---------------------

EXACT_PROGRAM = """
table h48 : hash(bit<48>) -> bit<16> [8];
table h128 : hash(bit<128>) -> bit<16> [4];
array keys : bit<128> [2];
array out : bit<32> [4];
fn g48(k: bit<48>) -> bit<32> { let v = h48.lookup(k) else return 0; return (v as bit<32>) + 1; }
fn g128(k: bit<128>) -> bit<32> { let v = h128.lookup(k) else return 0; return (v as bit<32>) + 1; }
block b {
    out[0] = g48(keys[0] as bit<48>);
    out[1] = g128(keys[1]);
    if h48.contains(keys[0] as bit<48>) { out[2] = 1; } else { out[2] = 0; }
    forward(0);
}"""


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**48 - 1), st.integers(0, 2**16 - 1)), max_size=12),
       st.lists(st.tuples(st.integers(0, 2**128 - 1), st.integers(0, 2**16 - 1)), max_size=6),
       st.lists(st.integers(0, 2**48 - 1), max_size=4))
def test_exact_tables_match_a_dict(entries48, entries128, absent):
    """Small tables force collisions and wrap-around probing; adding an existing key
    replaces its value; a full table refuses a new key and keeps every old one."""
    from npkit.compiler.mbl import compile_source
    from npkit.compiler.mbl.native import NativeError, NativeProgram

    native = NativeProgram(compile_source(EXACT_PROGRAM, "t.mbl"), "b")
    for name, size, entries in (("h48", 8, entries48), ("h128", 4, entries128)):
        model: dict[int, int] = {}
        for key, value in entries:
            if key not in model and len(model) == size:
                with pytest.raises(NativeError, match="full"):
                    native.table_add(name, key, value)
                continue
            native.table_add(name, key, value)
            model[key] = value
        if name == "h48":
            model48 = model
        else:
            model128 = model
    probes48 = [k for k, _ in entries48] + absent + [0]
    probes128 = [k for k, _ in entries128] + [0, 2**128 - 1]
    for i, k48 in enumerate(probes48):
        k128 = probes128[i % len(probes128)]
        native.write("keys", 0, k48)
        native.write("keys", 1, k128)
        (v,) = native.run([b"\0"])
        want48 = model48[k48] + 1 if k48 in model48 else 0
        want128 = model128[k128] + 1 if k128 in model128 else 0
        got = [native.read("out", i) for i in range(3)]
        assert (v.kind, got) == ("forward", [want48, want128, int(k48 in model48)])
