"""The C++ tester (bench/tester/fast.py, bench/tester/cpp) against the Python one: the same
frames, times, streams and sequence numbers for the same seeds on every traffic kind, and
the same parse of frames (good, damaged, foreign) as packet.parse."""

from __future__ import annotations

import random
import zlib
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.tester import (
    Analyzer,
    DestinationSet,
    Expected,
    FixedDestinations,
    PassThrough,
    RouteReference,
    RxRecord,
    Sizes,
    Stream,
    fast_analysis,
    generate,
    parse,
    pick_destinations,
)
from npkit.bench.tester import fast as fast_tester
from npkit.bench.tester._fast import parse_frames, rational_to_double
from npkit.bench.tester.destinations import BITS, lpm_prefix
from npkit.bench.tester.generator import generate_python
from npkit.bench.tester.media import port_model
from npkit.runtime.routes import committed_histogram, generate_routes
from npkit.sim.frames import PackedFrames

US = 1_000_000  # ps


@pytest.fixture(scope="module")
def dests() -> dict[int, object]:
    routes = {f: generate_routes(f, n, 7, committed_histogram(f), 16)  # type: ignore[arg-type]
              for f, n in ((4, 3000), (6, 600))}
    return {f: pick_destinations(routes[f], f, 200, seed=3) for f in (4, 6)}


def streams_of(kind: str, dests: dict[int, object]) -> tuple[list[Stream], dict[int, str]]:
    pos = {0: "oc192pos", 1: "oc192pos"}
    eth = {0: "10gbe", 1: "10gbe"}
    d = dests
    if kind == "ipv4-40":
        return [Stream(1, 0, d, "pos", 4, Sizes.fixed(40), duration_ps=20 * US),
                Stream(2, 1, d, "pos", 4, Sizes.fixed(40), duration_ps=20 * US)], pos
    if kind == "ipv6-sizes":
        return [Stream(3, 0, d, "pos", 6, Sizes.standard("pos", 6), load_percent=87.5,
                       duration_ps=400 * US, seed=5)], pos
    if kind == "mixed-imix":
        return [Stream(4, 0, d, "pos", "mixed", Sizes.imix(clamp=True), duration_ps=60 * US,
                       v6_share=0.3, seed=9),
                Stream(5, 1, d, "pos", "mixed", Sizes.imix(clamp=True), load_percent=33.3,
                       duration_ps=60 * US, start_ps=1234567, seed=9)], pos
    if kind == "ethernet-mix":
        return [Stream(6, 0, d, "ethernet", 4, Sizes((66, 128, 1518), (5, 3, 1)),
                       count=3000, transport="udp"),
                Stream(7, 0, d, "ethernet", 6, Sizes.fixed(100), load_percent=None, pps=2_000_003.5,
                       count=1500,
                       transport="raw", start_ps=777),
                Stream(8, 1, d, "ethernet", "mixed", Sizes.standard("ethernet", 6),
                       load_percent=Fraction3, duration_ps=30 * US, v6_share=0.9)], eth
    if kind == "fixed-destinations":
        fixed = {4: FixedDestinations.of("10.1.2.3", "192.0.2.9"),
                 6: FixedDestinations.of("2001:db8::1")}
        return [Stream(9, 0, fixed, "ethernet", "mixed", Sizes.fixed(128), count=500,
                       dst_mac="02:11:22:33:44:55", sport=1, dport=65535),
                Stream(10, 0, fixed, "ethernet", 4, Sizes.fixed(64), count=400)], eth
    raise AssertionError(kind)


Fraction3 = 100 / 3  # a load that is not a short decimal


@pytest.mark.parametrize("kind", ["ipv4-40", "ipv6-sizes", "mixed-imix", "ethernet-mix",
                                  "fixed-destinations"])
def test_fast_generator_makes_the_python_generators_frames(kind: str, dests) -> None:
    streams, ports = streams_of(kind, dests)
    assert all(fast_tester.eligible(s) for s in streams)
    fast = generate(streams, ports).records()
    slow = generate_python(streams, ports).records()
    assert len(fast) == len(slow) > 250
    assert fast == slow


def test_drawn_addresses_really_use_their_prefix(dests) -> None:
    streams, ports = streams_of("mixed-imix", dests)
    for record in generate(streams, ports).records():
        parsed = parse("pos", record.data)
        assert parsed is not None
        ip = parsed.ip
        dst = int.from_bytes(ip[16:20] if parsed.family == 4 else ip[24:40], "big")
        d = dests[parsed.family]
        found = lpm_prefix(d.routes, d.lengths, dst, BITS[parsed.family])
        assert found is not None and found in {(p.network, p.length) for p in d.prefixes}


def test_batches_are_bounded_and_add_up_to_the_traffic(dests) -> None:
    streams, ports = streams_of("ipv4-40", dests)
    models = {p: port_model(k) for p, k in ports.items()}
    whole = generate(streams, ports)
    for port, batches in fast_tester.batches(streams, models, limit=100).items():
        got = []
        for batch in batches:
            assert 0 < len(batch) <= 100
            got += [(int(t), d, int(s), int(q)) for t, d, s, q in
                    zip(batch.times_ps, batch.datas, batch.streams, batch.seqs, strict=True)]
        assert got == [(r.time_ps, r.data, r.stream, r.seq) for r in whole.ports[port]]


def test_a_size_without_room_for_the_signature_fails_as_in_python(dests) -> None:
    stream = Stream(1, 0, dests, "pos", 6, Sizes.fixed(40), count=3)
    for make in (generate, generate_python):
        with pytest.raises(ValueError, match="IPv6 packet of 40 IP bytes on pos"):
            make([stream], {0: "oc192pos"})


def test_other_destination_objects_use_the_python_generator(dests) -> None:
    class Every:  # a Destinations of the user's own
        family = 4

        def draw(self, k: int, rng: random.Random) -> tuple[int, int]:
            return 0, 0x0A000000 + rng.randrange(256)

    stream = Stream(1, 0, {4: Every()}, "pos", 4, Sizes.fixed(64), count=50)
    assert not fast_tester.eligible(stream)
    assert generate([stream], {0: "oc192pos"}).records() == \
        generate_python([stream], {0: "oc192pos"}).records()


# --------------------------------------------------------------------------- parsing
def parse_columns(framing: str, frame: bytes) -> tuple:
    """packet.parse's view of a frame as parse_frames' columns."""
    parsed = parse(framing, frame)  # type: ignore[arg-type]
    if parsed is None:
        return (0,)
    head = (parsed.family, len(parsed.link), len(parsed.ip))
    sig = parsed.signature
    if sig is None:
        return (1, *head)
    return (2, *head, sig.stream, sig.seq, sig.time_ps, sig.crc_ok)


def columns_of(cols: dict, i: int) -> tuple:
    status = int(cols["status"][i])
    if status == 0:
        return (0,)
    head = (int(cols["family"][i]), int(cols["link"][i]), int(cols["ip_len"][i]))
    if status == 1:
        return (1, *head)
    return (2, *head, int(cols["stream"][i]), int(cols["seq"][i]), int(cols["time_ps"][i]),
            bool(cols["crc_ok"][i]))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_parse_frames_agrees_with_parse(data: st.DataObject, dests) -> None:
    kind = data.draw(st.sampled_from(["mixed-imix", "ethernet-mix", "fixed-destinations"]))
    streams, ports = streams_of(kind, dests)
    streams = [replace(s, count=20, duration_ps=None) for s in streams]
    records = generate(streams, ports).records()
    framing = "pos" if kind == "mixed-imix" else "ethernet"
    frames = []
    for record in data.draw(st.lists(st.sampled_from(records), min_size=1, max_size=8)):
        frame = bytearray(record.data)
        how = data.draw(st.sampled_from(["keep", "flip", "cut", "junk"]))
        if how == "flip":
            bit = data.draw(st.integers(0, 8 * len(frame) - 1))
            frame[bit // 8] ^= 1 << (bit % 8)
        elif how == "cut":
            frame = frame[:data.draw(st.integers(0, len(frame)))]
        elif how == "junk":
            frame = bytearray(data.draw(st.binary(max_size=80)))
        frames.append(bytes(frame))
    cols = parse_frames(framing == "pos", frames)
    for i, frame in enumerate(frames):
        assert columns_of(cols, i) == parse_columns(framing, frame), frame.hex()
    assert zlib.crc32(b"") == 0  # (zlib is what both sides use for the CRC)


# --------------------------------------------------------------------------- analysis
@settings(max_examples=300, deadline=None)
@given(num=st.integers(-(2**80), 2**80), den=st.integers(1, 2**60))
def test_rational_to_double_rounds_as_python(num: int, den: int) -> None:
    assert rational_to_double(num, den) == num / den


def faulty_output(records: list, expect, models: dict, rng: random.Random) -> list[RxRecord]:
    """What a device with every kind of fault sends: the reference's output for most frames
    (``expect`` builds it), some lost, duplicated, late, damaged, misrouted or foreign."""
    out = []
    for r in records:
        parsed = parse(models[r.port].framing, r.data)
        want = expect(r, parsed)
        roll = rng.random()
        if want.port is None or roll < 0.08:  # filtered or lost
            continue
        link = want.link if want.link is not None else parsed.link
        data = bytearray(link + (want.ip if want.ip is not None else parsed.ip))
        if models[want.port].framing == "ethernet":
            data += bytes(max(0, 60 - len(data))) + bytes(4)
        port, time_ps = want.port, r.time_ps + 3_000_000 + rng.randrange(50_000)
        if roll < 0.12:
            bit = rng.randrange(8 * len(data))
            data[bit // 8] ^= 1 << (bit % 8)
        elif roll < 0.15:
            port = (port + 1) % len(models)
        elif roll < 0.19:
            time_ps += 900_000  # late: arrives after later packets
        elif roll < 0.22:
            out.append(RxRecord(port, time_ps + 7, bytes(data)))  # a duplicate
        elif roll < 0.24:
            out.append(RxRecord(port, time_ps, rng.randbytes(rng.randrange(1, 90))))
        out.append(RxRecord(port, time_ps, bytes(data)))
    return out


@pytest.mark.parametrize("kind,seed", [("ipv4-40", 1), ("mixed-imix", 2), ("ethernet-mix", 3),
                                       ("fixed-destinations", 4), ("ipv6-sizes", 5)])
def test_fast_analysis_reports_what_the_python_analyzer_reports(kind: str, seed: int,
                                                                dests) -> None:
    streams, ports = streams_of(kind, dests)
    models = {p: port_model(k) for p, k in ports.items()}
    records = generate(streams, ports).records()
    routes = {f: dests[f].routes for f in (4, 6)}
    framings = {p: m.framing for p, m in models.items()}
    references = [
        RouteReference(routes, lambda hop: hop % 2,
                       lambda hop, family: bytes([2, 0, 0, 0, hop, family] * 2)
                       + (b"\x08\x00" if family == 4 else b"\x86\xdd"), framings),
        PassThrough({0: 1, 1: 0}),
        PassThrough({0: 0}),  # port 1's frames are not forwarded
    ]
    faults = 0
    for reference in references:
        rx = faulty_output(records, reference, models, random.Random(seed))
        analyzer = Analyzer(ports, reference, bin_ps=250_000)
        assert fast_analysis.compiled(reference, analyzer.models) is not None
        fast = analyzer.analyze(records, rx)
        slow = analyzer.analyze_python(records, rx)
        assert fast == slow
        assert fast.total.sent == len(records)
        faults += fast.errors
    assert faults > 0


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("kind,seed", [("ipv4-40", 11), ("mixed-imix", 12),
                                       ("ethernet-mix", 13)])
def test_numpy_columns_give_the_python_analyzers_report(kind: str, seed: int, packed: bool,
                                                        dests) -> None:
    """The analysis fed as the lab's streamed trials feed it -- each port's sent frames as
    a generator batch's numpy columns (``sent_batch`` -> ``add_sent_batch``), the received
    frames as numpy columns (``received_arrays``) -- reports what the
    Python analyzer reports on the same records.  ``packed``: the frames as
    ``PackedFrames`` views (one buffer, no bytes each), as the generator and the chips
    hand them."""
    def frames(datas: list[bytes]) -> Any:
        if not packed:
            return datas
        whole = PackedFrames.from_list([b"before", *datas, b"after"])  # a view inside
        return whole[1:1 + len(datas)]

    streams, ports = streams_of(kind, dests)
    models = {p: port_model(k) for p, k in ports.items()}
    records = generate(streams, ports).records()
    routes = {f: dests[f].routes for f in (4, 6)}
    framings = {p: m.framing for p, m in models.items()}
    reference = RouteReference(routes, lambda hop: hop % 2,
                               lambda hop, family: bytes([2, 0, 0, 0, hop, family] * 2)
                               + (b"\x08\x00" if family == 4 else b"\x86\xdd"), framings)
    rng = random.Random(seed)
    rx = faulty_output(records, reference, models, rng)
    rng.shuffle(rx)
    analyzer = Analyzer(ports, reference, bin_ps=250_000)
    slow = analyzer.analyze_python(records, rx)
    tables = fast_analysis.compiled(reference, analyzer.models)
    fast = fast_analysis.FastAnalysis(analyzer.models, tables, 250_000)
    for port in sorted(ports):
        mine = [r for r in records if r.port == port]
        half = len(mine) // 2  # two batches a port
        for part in (mine[:half], mine[half:]):
            fast.sent_batch(port, np.array([r.time_ps for r in part], dtype=np.int64),
                            frames([r.data for r in part]),
                            np.array([r.stream for r in part], dtype=np.int32),
                            np.array([r.seq for r in part], dtype=np.int64))
    # and the received ones in two calls, as a sink's flushes give them: every frame of
    # the first before every frame of the second (each call's own order is shuffled)
    times = sorted(r.time_ps for r in rx)
    cut = next(i for i in range(len(times) // 3, len(times)) if times[i - 1] < times[i])
    rx = [r for r in rx if r.time_ps < times[cut]] + [r for r in rx if r.time_ps >= times[cut]]
    for part in (rx[:cut], rx[cut:]):
        fast.received_arrays(np.array([r.port for r in part], dtype=np.int32),
                             np.array([r.time_ps for r in part], dtype=np.int64),
                             frames([r.data for r in part]))
    report = fast.report()
    assert report == slow
    assert report.total.sent == len(records) and report.errors > 0


@pytest.mark.parametrize("kind,seed", [("ipv4-40", 6), ("mixed-imix", 7)])
def test_a_large_ipv4_table_is_looked_up_as_the_python_reference_does(kind: str,
                                                                      seed: int) -> None:
    """70,000 IPv4 routes: the C++ reference looks them up in a table per /24 block
    (analysis.cpp, build_dir24), prefixes longer than /24 in the tables; the destinations
    use one prefix of every length from /8 to /32."""
    routes = {4: generate_routes(4, 70_000, 7, committed_histogram(4), 16),
              6: generate_routes(6, 600, 7, committed_histogram(6), 16)}
    assert sum(1 for _, length in routes[4] if length > 24) > 10
    big = {f: pick_destinations(routes[f], f, 200, seed=3) for f in (4, 6)}
    test_fast_analysis_reports_what_the_python_analyzer_reports(kind, seed, big)


def test_other_expectations_use_the_python_analyzer(dests) -> None:
    streams, ports = streams_of("ipv4-40", dests)
    records = generate(streams, ports).records()[:50]
    analyzer = Analyzer(ports, lambda tx, parsed: Expected(tx.port, None, None))
    assert fast_analysis.compiled(analyzer.expect, analyzer.models) is None
    rx = [RxRecord(r.port, r.time_ps + 10, r.data) for r in records]
    assert analyzer.analyze(records, rx).errors == 0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(1, 10**6), family=st.sampled_from([4, 6, "mixed"]),
       sizes=st.lists(st.integers(0, 1500), min_size=1, max_size=4),
       weighted=st.booleans(), load=st.one_of(st.integers(1, 100), st.floats(0.5, 100.0)),
       pps=st.one_of(st.none(), st.integers(1_000, 30_000_000)),
       start=st.integers(0, 10**7), count=st.integers(1, 150),
       framing=st.sampled_from(["pos", "ethernet"]),
       transport=st.sampled_from(["auto", "udp", "raw"]), share=st.floats(0, 1),
       streams_on_port=st.integers(1, 3))
def test_random_streams_give_the_python_generators_frames(
        dests, seed, family, sizes, weighted, load, pps, start, count, framing, transport,
        share, streams_on_port) -> None:
    weights = tuple(range(1, len(sizes) + 1)) if weighted else None
    streams = [Stream(id=k + 1, port=0, destinations=dests, framing=framing, family=family,
                      sizes=Sizes(tuple(sizes), weights, "ip", clamp=True),
                      load_percent=None if pps else load, pps=pps, count=count + k,
                      seed=seed, v6_share=share, start_ps=start * k, transport=transport)
               for k in range(streams_on_port)]
    kind = "oc192pos" if framing == "pos" else "10gbe"
    try:
        slow = generate_python(streams, {0: kind}).records()
    except ValueError as err:  # a size the framing cannot carry: the same error
        with pytest.raises(ValueError, match=str(err).split(" (")[0]):
            generate(streams, {0: kind})
        return
    assert generate(streams, {0: kind}).records() == slow


def port_of_hop(hop: int) -> int:
    return hop % 2


def test_a_reference_with_its_tables_pickles(dests) -> None:
    import pickle

    streams, ports = streams_of("ipv4-40", dests)
    records = generate(streams, ports).records()[:20]
    reference = RouteReference({4: dests[4].routes}, port_of_hop)
    analyzer = Analyzer(ports, reference)
    first = analyzer.analyze(records, [])
    assert fast_analysis.compiled(reference, analyzer.models) is not None
    again = pickle.loads(pickle.dumps(reference))
    assert Analyzer(ports, again).analyze(records, []) == first


def test_empty_destinations_fail_as_in_python(dests) -> None:
    empty_set = DestinationSet(4, (), (), dests[4].routes, dests[4].lengths)
    no_range = DestinationSet(4, dests[4].prefixes[:1], ((),), dests[4].routes,
                              dests[4].lengths)
    for bad in (FixedDestinations(4, ()), empty_set, no_range):
        stream = Stream(1, 0, {4: bad}, "pos", 4, Sizes.fixed(40), count=3)
        assert not fast_tester.eligible(stream)
        with pytest.raises((ZeroDivisionError, ValueError)):
            generate([stream], {0: "oc192pos"})
