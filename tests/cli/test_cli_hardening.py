"""The reproducers of issue 20 ("Hardening") for the command line, the native runs and the
images: each bad argument or file is a one-line error naming it, exit status 1, reported
before any run starts (no counters printed), never "internal error" (cli_invoke.invoke
checks that on every call).  Plus the bounded native batches, the one pcap reader of both
targets and byte-identical `npkit build --images`."""

from __future__ import annotations

import filecmp
import json
import struct
from pathlib import Path

import pytest
from cli_invoke import invoke
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

ROOT = Path(__file__).resolve().parents[2]
L2WIRE = str(ROOT / "examples" / "l2wire" / "l2wire.toml")
ROUTER = str(ROOT / "examples" / "router" / "router.mbl")
TTL = str(ROOT / "tests" / "mbl" / "programs" / "ipv4_ttl.mbl")
CONTROL = ROOT / "examples" / "router4" / "control.toml"
RAN = "stopped:"  # the last line of a chip run: must not appear when arguments are bad


def frames(count: int = 4, pad: int = 20) -> list[bytes]:
    return [bytes(Ether() / IP(src="192.0.2.9", dst="198.18.0.1") / UDP() / bytes(pad + i))
            for i in range(count)]


@pytest.fixture
def pcap(tmp_path: Path) -> Path:
    path = tmp_path / "in.pcap"
    wrpcap(str(path), [Ether(f) for f in frames()])
    return path


def fails(*args: str, naming: str) -> str:
    code, out = invoke(*args)
    assert code == 1, out
    assert naming in out, out
    assert RAN not in out and "Usage:" not in out or "Invalid value" in out, out
    return out


# --------------------------------------------------------------------------- paths
@pytest.mark.parametrize("target", [[L2WIRE], [TTL, "--target", "native"]])
def test_out_to_a_folder_or_a_missing_folder_fails_before_the_run(tmp_path, pcap, target):
    (tmp_path / "DIR").mkdir()
    fails("run", *target, "--in", f"0={pcap}", "--out", f"1={tmp_path / 'DIR'}",
          naming="is a folder")
    fails("run", *target, "--in", f"0={pcap}", "--out", f"1={tmp_path / 'no' / 'o.pcap'}",
          naming="does not exist")


@pytest.mark.parametrize("option", ["--counters-json", "--trace"])
def test_chip_output_files_in_a_missing_folder_fail_before_the_run(tmp_path, pcap, option):
    out = fails("run", L2WIRE, "--in", f"0={pcap}", option, str(tmp_path / "no/dir/c.json"),
                naming=option)
    assert "folder" in out


def test_router_outputs_are_checked_before_the_run(tmp_path):
    fails("router", "run", "--counters-json", str(tmp_path / "no/c.json"),
          naming="--counters-json")
    fails("router", "run", "--out", f"1={tmp_path / 'no/o.pcap'}", naming="--out")


def test_build_and_asm_outputs_are_checked_first(tmp_path):
    fails("build", TTL, "-o", str(tmp_path / "no" / "x.ll"), naming="-o")
    fails("routes", "gen", "--family", "4", "--count", "5", "-o",
          str(tmp_path / "no" / "r.txt"), naming="-o")
    (tmp_path / "file").write_text("")
    fails("build", TTL, "--images", str(tmp_path / "file"), naming="--images")


# --------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("spec", ["1099511627776=a.pcap", "99999999999999999999=a.pcap",
                                  "65536=a.pcap"])
@pytest.mark.parametrize("target", [[L2WIRE], [TTL, "--target", "native"]])
def test_a_port_out_of_range_names_the_option(spec, target):
    fails("run", *target, "--in", spec, naming="out of range")


@pytest.mark.parametrize("option", ["--packets", "--cycles", "--seed", "--quiet-cycles"])
def test_huge_numbers_are_refused_by_name(pcap, option):
    fails("run", L2WIRE, "--in", f"0={pcap}", option, str(2**70), naming=option)


@pytest.mark.parametrize("args", [
    ("router", "run", "--load", "nan"), ("router", "run", "--load", "inf"),
    ("demo", "--load", "nan"), ("router", "run", "--count", str(10**12)),
    ("bench", "rfc2544", "--trial-us", "nan"), ("bench", "rfc2544", "--trial-us", "inf"),
    ("bench", "rfc2544", "--sizes", "99999999"),
    ("bench", "npf", "--trial-us", "nan"), ("bench", "npf", "--trial-us", "0"),
])
def test_nan_inf_and_huge_option_values_are_refused(args):
    code, out = invoke(*args)
    assert code == 1 and "Invalid value" in out, out


def test_a_bad_chip_config_is_named_as_given_never_as_a_temporary_manifest(tmp_path, pcap):
    (tmp_path / "bad.toml").write_text("[[[")
    out = fails("run", TTL, "--in", f"0={pcap}", "--chip", str(tmp_path / "bad.toml"),
                naming="--chip")
    assert "npkit-link-" not in out and "not valid TOML" in out, out


def test_an_me_override_for_no_image_is_an_error(pcap):
    fails("run", L2WIRE, "--in", f"0={pcap}", "--me", "nosuch.uc=1", naming="--me nosuch.uc")


# --------------------------------------------------------------------------- bench report
@pytest.mark.parametrize("text", ['{"suite": "rfc2544", "config": 3}', "[1, 2]", "nope",
                                  '{"suite": "rfc2544"}', '{"suite": "other"}', "{}"])
def test_bench_report_of_a_wrong_shaped_json(tmp_path, text):
    path = tmp_path / "results.json"
    path.write_text(text)
    fails("bench", "report", str(path), naming=f"{path}: ")


# --------------------------------------------------------------------------- router
def config_with(old: str, new: str, tmp_path: Path) -> Path:
    text = CONTROL.read_text()
    assert old in text
    path = tmp_path / "control.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "message"), [
    ("port = 1\n", "port = 99\n", "port 99 out of range 0..1"),
    ('ipv4 = ["192.0.2.1/24"]', 'ipv4 = ["192.0.2.1/24"]\nipv6 = ["2001:db8::1/64"]',
     "IPv4 only"),
    ("rate = 1000", "rate = -1", "rate must be a number"),
    ("rate = 1000", "rate = nan", "rate must be a number"),
    ("rate = 1000", "rate = inf", "rate must be a number"),
    ("burst = 100", "burst = 0", "burst = 0"),
    ("burst = 100", "bursts = 100", "unknown key 'bursts'"),
    ('prefix = "10.0.0.0/8"', 'prefix = "2001:db8::/32"', "IPv6"),
])
def test_router_check_and_run_refuse_the_same_configs(tmp_path, old, new, message):
    path = config_with(old, new, tmp_path)
    check = fails("router", "check", str(path), "--program", "router4", naming=message)
    run = fails("router", "run", "--program", "router4", "--config", str(path), "--count", "5",
               naming=message)
    line = check.split("Error: ", 1)[1].strip()
    assert line.startswith(f"{path}:") and line in run, (check, run)
    assert f"{path}: {path}" not in run  # the file named once


@pytest.mark.parametrize("time", ["nan", "inf", "-inf", "1e300", "-1", "1" * 5000])
def test_update_times_must_be_finite_and_bounded(tmp_path, time):
    updates = tmp_path / "updates.txt"
    updates.write_text(f"5 add 10.1.0.0/16 via 198.51.100.2\n{time} delete 10.1.0.0/16\n")
    out = fails("router", "run", "--updates", str(updates), naming=f"{updates}:2:")
    assert len(out.strip().splitlines()[-1]) < 300


def many_updates(tmp_path: Path, count: int = 200) -> Path:
    lines = [f"{10 + i} add 20.{i // 2}.0.0/16 via 192.0.2.3" if i % 2 == 0
             else f"{10 + i} delete 20.{i // 2}.0.0/16" for i in range(count)]
    path = tmp_path / "updates.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_updates_1us_apart_are_all_applied(tmp_path):
    code, out = invoke("router", "run", "--program", "router4", "--updates",
                       str(many_updates(tmp_path)), "--count", "20")
    assert code == 0, out
    assert "200 route changes applied" in out and "not applied" not in out, out


def test_updates_a_short_run_cuts_off_are_reported(tmp_path):
    # the changes are due 1 us apart from 10 to 209 us; 150,000 cycles end at 107 us
    code, out = invoke("router", "run", "--program", "router4", "--updates",
                       str(many_updates(tmp_path)), "--count", "20", "--cycles", "150000")
    assert code == 0, out
    assert "of 200 route changes were not applied" in " ".join(out.split()), out


# --------------------------------------------------------------------------- tables
@pytest.mark.parametrize(("line", "message"), [
    ("10.0.0.0 1", "has no /len"),
    ("-1/8 1", "does not fit bit<32>"),
    ("2001:db8::/32 1", "IPv6 prefix"),
    ("10.0.0.0/33 1", "longer than the key"),
    ("10.0.0.0/8 70000", "does not fit bit<16>"),
    ("10.0.0.0/8 -1", "does not fit bit<16>"),
    ("10.0.0.0/8 " + "9" * 5000, "does not fit bit<16>"),
])
def test_lpm_table_lines_that_do_not_fit_are_located(tmp_path, pcap, line, message):
    table = tmp_path / "fib.txt"
    table.write_text(f"# fib\n{line}\n")
    fails("run", TTL, "--target", "native", "--in", f"0={pcap}", "--table", f"fib4={table}",
          naming=f"{table}:2: ")
    fails("run", TTL, "--target", "native", "--in", f"0={pcap}", "--table", f"fib4={table}",
          naming=message)


def test_hash_table_keys_are_checked(tmp_path):
    from npkit.compiler.mbl.native import NativeProgram
    from npkit.compiler.mbl.sema import check_source
    from npkit.compiler.mbl.table_file import TableFileError, load_table_file

    program, bag = check_source(
        'import "std/headers.mbl";\n'
        "table t : hash(bit<32>) -> bit<8> [16] in sram;\n"
        "block b { let ip = packet<ipv4_t>(14) else drop(runt);\n"
        "  let k = t.lookup(ip.dst) else drop(miss); forward(k as bit<16>); }\n")
    assert not bag.errors, bag.render(program.sources)
    native = NativeProgram(program)
    for line, message in [("-1 1", "does not fit bit<32>"), ("2001:db8::1 1", "IPv6"),
                          ("10.0.0.0/8 1", "without /len"), ("10.0.0.1 300", "bit<8>")]:
        path = tmp_path / "t.txt"
        path.write_text(line + "\n")
        with pytest.raises(TableFileError, match=f"{path}:1: .*{message}"):
            load_table_file(native, "t", path)
    path.write_text("10.0.0.1 7\n0x0a000002 8\n")
    assert load_table_file(native, "t", path) == 2


def test_next_hops_past_the_array_are_refused_not_masked(tmp_path, pcap):
    routes = tmp_path / "routes.txt"
    routes.write_text("10.0.0.0/8 5000\n")
    fails("run", ROUTER, "--target", "native", "--in", f"0={pcap}", "--routes", str(routes),
          naming="next hop 5000")


def test_native_memory_indexes_are_never_masked():
    from npkit.compiler.mbl.native import NativeError, NativeProgram
    from npkit.compiler.mbl.sema import check_file

    program, _ = check_file(TTL)
    native = NativeProgram(program)
    with pytest.raises(NativeError, match="outside"):
        native.write("forwarded", 16, 1)
    with pytest.raises(NativeError, match="outside"):
        native.read("forwarded", -1)


# --------------------------------------------------------------------------- native runs
def test_native_batches_are_bounded_per_frame(monkeypatch):
    """One 65,535-byte frame among many small ones: no batch is frames x largest frame."""
    from npkit.compiler.mbl import native as native_mod
    from npkit.compiler.mbl.sema import check_file

    program, _ = check_file(TTL)
    native = native_mod.NativeProgram(program)
    small = frames(1)[0]
    packets = [small] * 5000 + [bytes(65535)] + [small] * 5000
    sizes: list[tuple[int, int]] = []
    real = native._run_batch

    def spy(batch, stride):
        sizes.append((len(batch), stride))
        return real(batch, stride)

    monkeypatch.setattr(native, "_run_batch", spy)
    verdicts = native.run(packets, 0)
    assert len(verdicts) == len(packets)  # every frame accounted, in order
    assert verdicts[5000].kind == "drop" and verdicts[0].kind == verdicts[-1].kind
    assert max(n * stride for n, stride in sizes) <= native_mod.BATCH_BYTES
    assert max(n for n, _ in sizes) <= native_mod.BATCH_FRAMES
    big = [n for n, stride in sizes if stride > 65535]
    assert big and max(big) * (65535 + 64) <= native_mod.BATCH_BYTES + 65535 + 128


def test_native_run_stream_equals_run():
    from npkit.compiler.mbl.native import NativeProgram
    from npkit.compiler.mbl.sema import check_file

    program, _ = check_file(TTL)
    packets = frames(50) + [bytes(60000)] + frames(50)
    one = NativeProgram(program).run(packets, 0)
    two = list(NativeProgram(program).run_stream((p, 0) for p in packets))
    assert one == two


def bad_pcaps(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = tmp_path / "good.pcap"
    wrpcap(str(good), [Ether(f) for f in frames(3)])
    data = good.read_bytes()
    out = {}
    (tmp_path / "cut.pcap").write_bytes(data[:-5])
    out["truncated"] = (tmp_path / "cut.pcap", "record 3: truncated packet data")
    huge = bytearray(data)
    struct.pack_into("<II", huge, 24 + 8, 0xFFFFFFFF, 0xFFFFFFFF)  # record 1 caplen, len
    (tmp_path / "huge.pcap").write_bytes(bytes(huge))
    out["caplen"] = (tmp_path / "huge.pcap", "record 1: corrupt record header")
    (tmp_path / "head.pcap").write_bytes(data[:24 + 7])
    out["header"] = (tmp_path / "head.pcap", "record 1: truncated record header")
    return out


@pytest.mark.parametrize("kind", ["truncated", "caplen", "header"])
def test_both_targets_reject_a_bad_pcap_the_same_way(tmp_path, kind):
    path, message = bad_pcaps(tmp_path)[kind]
    chip = fails("run", TTL, "--in", f"0={path}", naming=message)
    native = fails("run", TTL, "--target", "native", "--in", f"0={path}", naming=message)
    assert chip.strip().splitlines()[-1] == native.strip().splitlines()[-1]


# --------------------------------------------------------------------------- determinism
def test_build_images_is_byte_identical_across_runs_and_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for folder in ("one", str(tmp_path / "elsewhere" / "two")):
        code, out = invoke("build", TTL, "--images", folder)
        assert code == 0, out
    one, two = tmp_path / "one", tmp_path / "elsewhere" / "two"
    names = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(two).as_posix() for p in two.rglob("*")
                           if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(one, two, names, shallow=False)
    assert not mismatch and not errors, mismatch
    for image in one.glob("*.img"):
        files = json.loads(image.read_text())["files"]
        assert not any(str(tmp_path) in f or "/tmp" in f for f in files), files


@pytest.mark.parametrize("times_a", [[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]])
def test_native_runs_take_frames_in_time_order_streamed_or_sorted(tmp_path, times_a):
    """Files in time order are merged as they are read; one out of order is sorted: the
    frames leave in timestamp order either way (ties: the ports in the order given)."""
    from scapy.utils import rdpcap

    def ip_frame(tag: int) -> Ether:
        return Ether(bytes(Ether() / IP(src="192.0.2.9", dst="10.0.0.1") / UDP(sport=tag)))

    a = [ip_frame(i) for i in range(3)]
    b = [ip_frame(10 + i) for i in range(3)]
    for frame, t in zip(a, times_a, strict=True):
        frame.time = t
    for frame, t in zip(b, [1.5, 2.0, 2.5], strict=True):
        frame.time = t
    wrpcap(str(tmp_path / "a.pcap"), a)
    wrpcap(str(tmp_path / "b.pcap"), b)
    (tmp_path / "fib.txt").write_text("10.0.0.0/8 1\n")
    code, out = invoke("run", TTL, "--target", "native", "--in", f"0={tmp_path / 'a.pcap'}",
                       "--in", f"1={tmp_path / 'b.pcap'}", "--table",
                       f"fib4={tmp_path / 'fib.txt'}", "--out", f"1={tmp_path / 'o.pcap'}")
    assert code == 0 and "6 packets" in out, out
    sent = sorted([(t, 0, f[UDP].sport) for f, t in zip(a, times_a, strict=True)]
                  + [(float(f.time), 1, f[UDP].sport) for f in b])
    got = [(float(p.time), p[UDP].sport) for p in rdpcap(str(tmp_path / "o.pcap"))]
    assert got == [(t, sport) for t, _, sport in sent], got
