"""The native target against independent references (scapy, zlib, Python models)."""

from __future__ import annotations

import ipaddress
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Ether, raw


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
    total = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, 20, 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    if total != 0xFFFF:
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


def test_unimplemented_intrinsic_is_a_clear_error():
    import pytest

    from npkit.compiler.mbl import NativeError, NativeProgram, compile_source

    program = compile_source("array a: bit<64>[2];\nblock b { a[0] = hash64(a[1]); drop(x); }")
    with pytest.raises(NativeError, match="does not implement npu.hash64"):
        NativeProgram(program, "b")


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
