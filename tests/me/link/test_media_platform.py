"""Platforms that link the MBL receive and transmit (issue 12 item 2, acceptance 5;
docs/link.md, "Platforms"): on a platform with `[media] compiled = true` a pipeline whose
first stage is `frame_rx` (microblocks/media_rx.mbl) is linked as the pool with its receive
and transmit compiled from MBL (link/pool.py, link/dispatch/pool.uc), by `chip_manifest`,
`build_images`, `npkit build --images` and `npkit run X.mbl --target chip` alike; a
pipeline without a receive stage keeps the rings mapping with the hand-written
rx_eth.uc / tx_eth.uc (the baseline); a receive stage on a platform without compiled media
is a located `link-media` error.

The chip-vs-native differential tests of the rings mapping, run with the compiled receive
and transmit and parametrized over both mappings: test_compiled_router.py's rules and
random frames (examples/router/router.mbl against tests/mbl/programs/media_router.mbl),
test_compiled_pos.py's rules on 2 x OC-192 POS, test_build_images.py's folder, and the
l2wire and router pcap runs through the command line (scapy-built frames, read back with
dpkt, compared with the input or with the native target's output).

    .venv/bin/python -m pytest -q tests/me/link/test_media_platform.py
"""

from __future__ import annotations

import random
from pathlib import Path

import dpkt
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import HDLC, IP, PPP, TCP, UDP, Dot1Q, Ether, IPv6, Raw, raw

from npkit.cli import main
from npkit.compiler.mbl import CompileError, NativeProgram, compile_file, compile_source
from npkit.link import (
    Manifest,
    PlatformError,
    build_images,
    chip_manifest,
    load_platform,
    parse_manifest,
)
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.loader import leak_check
from npkit.runtime.lpm import RouteTables

from .harness import check_against_native
from .test_compiled_pos import POS_TINY
from .test_compiled_router import LOCAL4, NEXTHOPS, ROUTES4, ROUTES6, RULES, frame

REPO = Path(__file__).resolve().parents[3]
PROGRAMS = REPO / "tests" / "mbl" / "programs"
MEDIA_ROUTER = PROGRAMS / "media_router.mbl"
MEDIA_L2WIRE = PROGRAMS / "media_l2wire.mbl"
ROUTER = REPO / "examples" / "router" / "router.mbl"
ROUTES = REPO / "examples" / "router" / "routes.txt"
PLATFORM = "ixp2800-2x10gbe"
START_S = 30e-6          # pcap times from 30 us: the pool's threads have registered by then
# the router with its receive and transmit in MBL (media_router) and without (router: the
# rings mapping's hand-written rx_eth.uc / tx_eth.uc)
MAPPINGS = {"pool": (MEDIA_ROUTER, "media_router"), "rings": (ROUTER, "router")}


def router_tables(native: NativeProgram) -> NativeProgram:
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(ROUTES4, ROUTES6)
    for address in LOCAL4:
        native.table_add("local4", address, 1)
    return native


# --------------------------------------------------------------------------- platforms
def test_the_two_port_platforms_link_mbl_media_and_the_four_port_ones_do_not() -> None:
    compiled = {name: load_platform(name).media.compiled
                for name in ("ixp2800-2x10gbe", "ixp2800-2xoc192pos", "ixp2800-4x10gbe",
                             "ixp2800-4x1gbe", "ixp2800-4xoc192pos")}
    assert compiled == {"ixp2800-2x10gbe": True, "ixp2800-2xoc192pos": True,
                        "ixp2800-4x10gbe": False, "ixp2800-4x1gbe": False,
                        "ixp2800-4xoc192pos": False}
    two = load_platform(PLATFORM)
    assert two.pool_mes(2, 2) == 8 and two.pool_mes(2, 1) == 16


@pytest.mark.parametrize(("good", "line", "message"), [
    ("compiled = true", "compiled = 1", "compiled: expected true or false"),
    ("pool_mes_per_port = 8", "pool_mes_per_port = 0", "key 'pool_mes_per_port'"),
    ("compiled = true", "mapping = 'pool'", "unknown key 'mapping'"),
])
def test_a_bad_media_key_is_an_error_naming_it(tmp_path: Path, good: str, line: str,
                                               message: str) -> None:
    text = (Path(load_platform(PLATFORM).path).read_text(encoding="utf-8")
            .replace('folder = "../../../microblocks/uc"',
                     f'folder = "{REPO / "microblocks" / "uc"}"')
            .replace(good, line))
    path = tmp_path / "platform.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlatformError, match=message):
        load_platform(path)


def test_a_receive_stage_links_as_the_pool_and_a_plain_pipeline_as_the_rings() -> None:
    media = chip_manifest(compile_file(MEDIA_ROUTER), PLATFORM)
    assert [(s.path.name, s.mes) for s in media.images] == [("pool.uc", tuple(range(16)))]
    assert media.program is not None and media.program.stages[0] == "rx"
    plain = chip_manifest(compile_file(ROUTER), PLATFORM)
    assert [s.path.name for s in plain.images] == ["rx.uc", "fwd.uc", "tx.uc"]


def test_a_receive_stage_on_a_platform_without_compiled_media_is_a_located_error() -> None:
    with pytest.raises(CompileError) as info:
        chip_manifest(compile_file(MEDIA_ROUTER), "ixp2800-4x10gbe")
    diag = info.value.diagnostics[0]
    assert diag.kind == "link-media"
    assert diag.location is not None and Path(diag.location.file).name == "media_rx.mbl"
    assert "ixp2800-2x10gbe" in diag.hint and "compiled = true" in diag.hint


# --------------------------------------------------------------------------- differential
@pytest.fixture(scope="module", params=sorted(MAPPINGS))
def router(request) -> tuple[Manifest, NativeProgram]:
    source, entry = MAPPINGS[request.param]
    program = compile_file(source)
    native = router_tables(NativeProgram(program, entry))
    linked = chip_manifest(program, PLATFORM, tables=native)
    assert (linked.images[0].path.name == "pool.uc") == (request.param == "pool")
    return linked, native


def test_every_rule_once_matches_the_native_router(router) -> None:
    frames = {0: RULES, 1: RULES[::-1]}
    result = CompiledRun(router[0]).run(frames, load=0.2)
    check_against_native(result, router[1], frames)
    assert sum(len(v) for v in result.out.values()) >= 8


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_frames_match_the_native_router(router, data: st.DataObject) -> None:
    """Frames of up to 1,454 bytes: several RBUF elements, reassembled by frame_rx."""
    frames = {p: [data.draw(frame((p << 14) | i)) for i in range(data.draw(st.integers(0, 40)))]
              for p in (0, 1)}
    check_against_native(CompiledRun(router[0]).run(frames, load=0.2), router[1], frames)


MEDIA_POS_TINY = """
import "microblocks/media_rx.mbl";
import "microblocks/media_tx.mbl";
""" + POS_TINY + """
pipeline media_pos_tiny {
    ports 0..1;
    stage rx = frame_rx;
    stage body = pos_tiny;
    stage tx = frame_tx;
    rx -> body;
}
"""


def pos_frames(port: int) -> list[bytes]:
    """test_compiled_pos's kinds of frame, 44..1,504 bytes."""
    rng = random.Random(5 + port)
    frames = []
    for k in range(60):
        size = rng.choice([0, 0, 24, 200, 600, 1460])
        if k % 5 == 4:
            frames.append(raw(HDLC() / PPP(proto=0x0057) / IPv6(
                dst="2001:db8::1", hlim=rng.choice([1, 64])) / (b"6" * size)))
            continue
        f = bytearray(raw(HDLC() / PPP() / IP(dst=f"{rng.randrange(256)}.0.0.1", id=k,
                                               ttl=rng.choice([1, 64, 64, 64]))
                          / UDP() / (b"4" * size)))
        if k % 7 == 6:
            f[0] = 0x0F                               # a bad HDLC address
        frames.append(bytes(f))
    frames.append(raw(HDLC() / PPP(proto=0x8021) / (b"c" * 20)))   # not IP: exception
    return frames


def test_a_pos_pipeline_with_mbl_media_matches_the_native_program() -> None:
    program = compile_source(MEDIA_POS_TINY, str(REPO / "media_pos_tiny.mbl"))
    native = NativeProgram(program, "media_pos_tiny")
    for byte in range(256):
        native.write("out_of", byte, byte & 1)
    linked = chip_manifest(program, "ixp2800-2xoc192pos", tables=native)
    assert linked.images[0].path.name == "pool.uc"
    frames = {p: pos_frames(p) for p in (0, 1)}
    result = CompiledRun(linked).run(frames, load=0.2)
    check_against_native(result, native, frames)
    assert result.drops and result.exceptions and result.out[0] and result.out[1]


def test_a_built_folder_runs_the_compiled_receive(tmp_path: Path) -> None:
    """build_images writes the pool's image; the folder alone runs the native frames."""
    program = compile_file(MEDIA_ROUTER)
    native = router_tables(NativeProgram(program, "media_router"))
    path = build_images(program, PLATFORM, tmp_path, tables=native)
    assert "pool.img" in {p.name for p in tmp_path.iterdir()}
    frames = {0: RULES, 1: RULES[::-1]}
    run = CompiledRun(parse_manifest(path))
    check_against_native(run.run(frames, load=0.2), native, frames)
    assert all(r.ok for r in leak_check(run.loaded))


# --------------------------------------------------------------------------- pcaps, CLI
def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result.exit_code, result.output


def read_pcap(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return [bytes(buf) for _, buf in dpkt.pcap.Reader(f)]


def l2_frames(count: int, seed: int) -> list[bytes]:
    """test_l2wire's mix: Ethernet frames of 60..1,514 bytes, IPv4/UDP, IPv4/TCP,
    IPv6/UDP and 802.1Q."""
    rng = random.Random(seed)
    mac = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}
    heads = [lambda i: Ether(**mac) / IP(src="198.18.0.1", dst="198.19.0.1", id=i) / UDP(),
             lambda i: Ether(**mac) / IP(src="198.18.0.2", dst="198.19.0.2") / TCP(seq=i),
             lambda i: Ether(**mac) / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(),
             lambda i: Ether(**mac) / Dot1Q(vlan=1 + i % 4094) / IP() / UDP()]
    out = []
    for i in range(count):
        head = rng.choice(heads)(i)
        size = rng.randint(60, 1514)
        out.append(raw(head / Raw(rng.randbytes(max(0, size - len(head))))))
    return out


def write_paced_pcap(path: Path, frames: list[bytes], load: float) -> None:
    """Frames back to back at `load` of 10GbE line rate (20 bytes of preamble and gap),
    from START_S on."""
    t = START_S
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out, nano=True)
        for f in frames:
            writer.writepkt(f, t)
            t += (len(f) + 20) * 8 / 10e9 / load


def test_l2wire_in_mbl_forwards_pcaps_byte_identical_in_order(tmp_path: Path) -> None:
    """test_l2wire's mixed traffic (60..1,514-byte Ethernet frames, scapy) in pcaps through
    `npkit build --images` and `npkit run DIR/manifest.toml`: each port's frames leave the
    other port unchanged and in order, offered at 30 % of line rate from 30 us on
    (`--pace timestamps`: the MBL receive is serial per port, docs/datapath.md)."""
    frames = l2_frames(120, seed=3)
    offered = {p: frames[p::2] for p in (0, 1)}
    for p in (0, 1):
        write_paced_pcap(tmp_path / f"in{p}.pcap", offered[p], 0.3)
    code, out = invoke("build", str(MEDIA_L2WIRE), "--images", str(tmp_path / "img"))
    assert code == 0, out
    code, out = invoke("run", str(tmp_path / "img" / "manifest.toml"),
                       "--in", f"0={tmp_path / 'in0.pcap'}", "--in", f"1={tmp_path / 'in1.pcap'}",
                       "--out", f"0={tmp_path / 'out0.pcap'}",
                       "--out", f"1={tmp_path / 'out1.pcap'}", "--pace", "timestamps")
    assert code == 0, out
    for p in (0, 1):
        assert read_pcap(tmp_path / f"out{1 - p}.pcap") == offered[p]


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_the_router_on_the_chip_writes_the_native_target_s_pcap(tmp_path: Path,
                                                                mapping: str) -> None:
    """`npkit run X.mbl --target chip|native --routes ... --in --out`: the same frames."""
    write_paced_pcap(tmp_path / "in.pcap", RULES, 0.2)
    source, _entry = MAPPINGS[mapping]
    outputs = {}
    pace = {"native": (), "chip": ("--pace", "timestamps")}
    for target in ("native", "chip"):
        code, out = invoke("run", str(source), "--target", target, "--routes", str(ROUTES),
                           "--ports", "2",
                           "--in", f"0={tmp_path / 'in.pcap'}",
                           "--out", f"1={tmp_path / target}.pcap", *pace[target])
        assert code == 0, out
        outputs[target] = read_pcap(tmp_path / f"{target}.pcap")
    assert outputs["native"] and outputs["chip"] == outputs["native"]


def test_the_compile_report_of_an_mbl_receive_is_the_pool_s() -> None:
    """`npkit build X.mbl --report` compiles a pipeline that receives in MBL as the pool
    runs it (the header window in local memory) and maps it on the pool's 16 MEs."""
    code, out = invoke("build", str(MEDIA_ROUTER), "--report")
    assert code == 0, out
    assert "runs to completion on each of 16 forwarding MEs" in out
