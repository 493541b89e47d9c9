"""The compiled data path's mapping (docs/datapath.md): a pool of forwarding MEs per input
port runs link/dispatch/pool.uc around a body compiled with the window in local memory
(`compile_me(program, entry, LM_WINDOW_ABI)`); no RX or TX ME.

    build = compile_me(program, entry, LM_WINDOW_ABI)
    manifest = link_pool(program, build, "ixp2800-2xoc192pos", mes_per_port=4)
    run = CompiledRun(manifest)          # memories, drop counters as for link()

The runtime layout (memory map, drop counters, the exception ring and the freelists that
CompiledRun reads) is link.plan's, planned as for one forwarding ME per port; the pool's
own scratch words (token wrap words, TBUF claim counters) follow the drop counters.
A frame longer than the 56-byte window takes a buffer of the input port's freelist for its
bytes past the window (dram[rbuf_rd] in per RBUF element, dram[tbuf_wr] out); a frame of
several elements is reassembled in it mpacket by mpacket, its header window read from its
first element by the thread of its last (docs/datapath.md, "Mpackets").
Exceptions reach the exception ring with their frame in a buffer, as with link()
(CompiledRun.take_exceptions).

A pipeline whose first stage is a receive stage (MBL receive and transmit: frame_rx /
frame_tx) runs only here; `selects_pool` says whether a platform links it so by default
(`[media] compiled = true`, docs/link.md), which link() and chip_manifest() ask."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.mbl.sema import Program
from npkit.compiler.mbl.types import (
    META_CODE,
    META_FIELDS,
    META_MEDIA,
    META_VERDICT,
    VERDICT_CONSUMED,
    VERDICT_DROP,
    VERDICT_EXCEPTION,
    VERDICT_FORWARD,
)
from npkit.compiler.me.abi import LM_WINDOW_ABI, META_DRAM_ADDR, Mapping, MEAssignment
from npkit.compiler.uc import assemble_file

from .errors import LinkError
from .manifest import ImageSpec, Manifest
from .plan import BAD_PORT, NO_VERDICT, memory_map, plan_runtime, sram_channel_bytes
from .platform import DEFAULT_PLATFORM, Platform, as_platform, load_platform, platform_names
from .program import ProgramInfo

if TYPE_CHECKING:
    from npkit.compiler.me import MEBuild

LINK_DIR = Path(__file__).resolve().parent
POOL_FIRST_ME = 0
FRAME_WINDOW = 56                # pool.uc's header window ($0..$13)
ELEMENT_MAX_BYTES = 16 * 8       # pool.uc: one dram[rbuf_rd] of 1..16 quadwords an element
TX_ELEMENTS_MAX = 15             # pool.uc: its transmit is unrolled for frames of 15 elements


def pool_scratch(drop_cnt_base: int, drop_counters: int, ports: int,
                 rbuf_elements: int) -> dict[str, int]:
    """The pool's scratch words after the drop counters: per input port two token wrap
    words, per output port a TBUF claim counter, per input port a reassembly word (SOP
    element | next mpacket's index << 16), per RBUF element the buffer handle of the frame
    whose first element it is (docs/datapath.md, "Mpackets")."""
    tok = drop_cnt_base + 4 * drop_counters
    claim = tok + 8 * ports
    rasm = claim + 4 * ports
    handles = rasm + 4 * ports
    return {"TOK_BASE": tok, "CLAIM_BASE": claim, "RASM_BASE": rasm, "HANDLE_BASE": handles,
            "POOL_SCRATCH_END": handles + 4 * rbuf_elements}


def _served(program: Program, entry: str, platform: Platform) -> tuple[str, ...]:
    """The port kinds the entry is linked for: the platform's, or the first b + 1 of them
    for a pipeline that declares `ports 0..b` (link() reports bad declarations at their MBL
    location; link_pool, which link() calls for the pool option after that check, only
    refuses them).  Here rather than linker.served_ports: npkit.link may not import in a
    cycle, and linker imports this module."""
    pipeline = program.pipelines.get(entry)
    if pipeline is None or pipeline.ports is None:
        return platform.ports
    first, last = pipeline.ports
    if first != 0 or last >= len(platform.ports):
        raise LinkError(f"pipeline {entry} declares ports {first}..{last}: platform "
                        f"{platform.name} has ports 0..{len(platform.ports) - 1}")
    return platform.ports[:last + 1]


def _source_of(program: Program, entry: str) -> str:
    decl = program.pipelines.get(entry) or program.blocks.get(entry)
    if decl is None:
        return ""
    path = Path(decl.span.file)
    return str(path.resolve()) if path.is_file() else str(path)


def _stages(program: Program, entry: str) -> tuple[str, ...]:
    edges = program.pipeline_edges.get(entry)
    return tuple(edges) if edges else (entry,)


def receive_stage(program: Program, entry: str) -> SourceLocation | None:
    """The location of the first receive operation of the entry's first stage (or of the
    block itself); None when it has none."""
    pipeline = program.pipelines.get(entry)
    first = pipeline.stages[0].block if pipeline is not None else entry
    return program.media_use.get(first, {}).get("rx")


def _receive_stage(program: Program, entry: str) -> bool:
    return receive_stage(program, entry) is not None


def entry_name(program: Program, entry: str | None) -> str:
    """The entry compile_me takes for `entry` (None: the root file's only pipeline, else
    its only block)."""
    from npkit.compiler.me.front.prepare import choose_entry

    return choose_entry(program, entry).name


def selects_pool(program: Program, entry: str, platform: Platform) -> bool:
    """Whether `platform` links `entry` as the pool with its MBL receive and transmit:
    the platform's `[media] compiled = true` and a receive stage first (docs/link.md,
    "Platforms").  A receive stage on a platform without it is a located `link-media`
    CompileError: the rings mapping's hand-written receive cannot run it."""
    where = receive_stage(program, entry)
    if where is None:
        return False
    if not platform.media.compiled:
        compiled = [n for n in platform_names() if load_platform(n).media.compiled]
        raise CompileError([Diagnostic(
            f"pipeline {entry} receives in MBL (its first stage is a receive stage), but "
            f"platform {platform.name} links the hand-written receive and transmit "
            f"({platform.media.rx.name}, {platform.media.tx.name})", where,
            "link for a platform with `[media] compiled = true` (" + ", ".join(compiled)
            + "), or leave the receive and transmit stages out", kind="link-media")],
            _sources(where))
    return True


def _sources(where: SourceLocation) -> dict[str, str]:
    try:
        return {where.file: Path(where.file).read_text(encoding="utf-8")}
    except OSError:
        return {}


def pool_header(defines: dict[str, int]) -> str:
    lines = ["// pool.h -- generated by npkit.link.pool: do not edit.",
             "#ifndef POOL_H", "#define POOL_H"]
    lines += [f"#define {k} {v:#x}" for k, v in defines.items()]
    return "\n".join(lines + ["#endif", ""])


def link_pool(program: Program, build: MEBuild, platform: Platform | str = DEFAULT_PLATFORM,
              *, mes_per_port: int = 4, build_dir: str | Path | None = None,
              rx_ports: int | None = None) -> Manifest:
    """Link `build` (compiled with LM_WINDOW_ABI) as the pool mapping: MEs POOL_FIRST_ME +
    N p .. + N - 1 receive, forward and transmit port p's frames.  `rx_ports=1`: only port
    0 receives (a chip of the dual system), its pool may have all the MEs.  Raises
    LinkError."""
    platform = as_platform(platform)
    body = build.body
    if body.header_lm_word != LM_WINDOW_ABI.header_lm_word \
            or body.window_bytes > LM_WINDOW_ABI.window_max_bytes:
        raise LinkError(f"{build.entry}: the pool mapping needs a body compiled with "
                        "LM_WINDOW_ABI (the header window in local memory)")
    kinds = _served(program, build.entry, platform)
    ports = len(kinds)
    receiving = ports if rx_ports is None else rx_ports
    if not 1 <= receiving <= ports:
        raise LinkError(f"rx_ports={rx_ports}: 1..{ports}")
    if not 1 <= mes_per_port or POOL_FIRST_ME + receiving * mes_per_port > platform.mes:
        raise LinkError(f"mes_per_port={mes_per_port} on {receiving} receiving ports: the "
                        f"pools need {receiving * mes_per_port} MEs, platform {platform.name} "
                        "gives "
                        f"{platform.mes}")
    cfg = platform.chip_config()
    placements = memory_map(program)
    channel_bytes = sram_channel_bytes(placements, cfg)
    runtime = plan_runtime(program, ports, cfg, channel_bytes, 1, platform.descriptor_align,
                           rx_ports)
    msf = cfg.raw["msf"]
    element_bytes = int(msf["element_bytes"])
    scratch = pool_scratch(runtime.drop_cnt_base, runtime.drop_counters, ports,
                           int(msf["rbuf_bytes"]) // element_bytes)
    if scratch["POOL_SCRATCH_END"] > cfg.scratch_bytes:
        raise LinkError("no scratch left for the pool's token, claim and reassembly words")
    part = int(msf["tbuf_bytes"]) // element_bytes // ports
    if not FRAME_WINDOW < element_bytes <= ELEMENT_MAX_BYTES:
        raise LinkError(f"RBUF elements of {element_bytes} B: pool.uc needs more than the "
                        f"{FRAME_WINDOW} B window and at most {ELEMENT_MAX_BYTES} B (one "
                        "dram[rbuf_rd] of 16 quadwords an element)")
    if part & (part - 1) or element_bytes & (element_bytes - 1):
        raise LinkError(f"{part} TBUF elements of {element_bytes} B per port: pool.uc needs "
                        "powers of two")
    reasons = len(program.reasons.ids)
    lay = runtime.layout
    frame_max = lay.buf_bytes - lay.buf_data_offset
    if -(-frame_max // element_bytes) > min(TX_ELEMENTS_MAX, part):
        raise LinkError(f"buffers of {frame_max} data bytes in TBUF elements of "
                        f"{element_bytes} B: pool.uc sends frames of at most "
                        f"{min(TX_ELEMENTS_MAX, part)} elements ({part} a port)")
    defines = {
        "POOL_FIRST_ME": POOL_FIRST_ME, "POOL_MES": mes_per_port, "PORTS": ports,
        "DISPATCH_LM_BYTE": 4 * runtime.dispatch_lm_word,
        "ELEMENT_SHIFT": element_bytes.bit_length() - 1, "ELEMENT_BYTES": element_bytes,
        "TBUF_PART_ELEMENTS": part, "TBUF_PART_SHIFT": part.bit_length() - 1,
        "TBUF_PART_BYTES": part * element_bytes,
        "DROP_CNT_BASE": runtime.drop_cnt_base, "DROP_REASON_MAX": reasons,
        "BAD_PORT_INDEX": reasons + 1, "CNT_TOO_LONG": lay.cnt_rx_too_long,
        "FRAME_BYTES_MAX": lay.buf_bytes - lay.buf_data_offset,
        "CNT_RX_NO_BUFFER": lay.cnt_rx_no_buffer, "RX_FL_CHANNEL": lay.rx_fl_channel,
        "FREELIST_QUEUE": lay.freelist_queue, "BUF_SHIFT": lay.buf_shift,
        "BUF_DATA_OFFSET": lay.buf_data_offset,
        "K_DATA": (lay.buf_data_offset - (lay.buf_desc_base << lay.buf_shift)) & 0xFFFFFFFF,
        "META_FIRST_BYTE": lay.meta_first_byte, "META_WRITE_WORDS": 3,
        "NO_PORT": lay.no_port, "EXC_RING": lay.exc_ring,
        "EXC_ENTRY_WORDS": lay.exc_entry_words,
        "META_NEXT_HOP": META_FIELDS["next_hop"].word, "META_DRAM_ADDR": META_DRAM_ADDR,
        "META_MEDIA": META_MEDIA, "VERDICT_CONSUMED": VERDICT_CONSUMED,
        **({"RX_STAGE": 1} if _receive_stage(program, build.entry) else {}),
        "META_IN_PORT": META_FIELDS["in_port"].word, "META_LEN": META_FIELDS["len"].word,
        "META_OUT_PORT": META_FIELDS["out_port"].word, "META_VERDICT": META_VERDICT,
        "META_CODE": META_CODE, "VERDICT_FORWARD": VERDICT_FORWARD,
        "VERDICT_DROP": VERDICT_DROP, "VERDICT_EXCEPTION": VERDICT_EXCEPTION,
        **{k: v for k, v in scratch.items() if k != "POOL_SCRATCH_END"}}
    mes = tuple(range(POOL_FIRST_ME, POOL_FIRST_ME + receiving * mes_per_port))

    def write(folder: Path) -> ImageSpec:
        (folder / "pool.h").write_text(pool_header(defines), encoding="utf-8")
        (folder / "body.uc").write_text(body.uc, encoding="utf-8")
        path = folder / "pool.uc"
        path.write_text('#include "dispatch/pool.uc"\n', encoding="utf-8")
        image = assemble_file(path, (str(folder), str(LINK_DIR)))
        return ImageSpec(path, mes, "linked pool image", image)

    if build_dir is None:
        with tempfile.TemporaryDirectory(prefix="npkit-pool-") as tmp:
            spec = write(Path(tmp))
            path = Path(tmp) / "manifest.toml"
    else:
        Path(build_dir).mkdir(parents=True, exist_ok=True)
        spec = write(Path(build_dir))
        path = Path(build_dir) / "manifest.toml"
    counter_names = {0: NO_VERDICT, reasons + 1: BAD_PORT}
    counter_names.update({i: name for name, i in program.reasons.ids.items()})
    info = ProgramInfo(
        entry=build.entry, source=_source_of(program, build.entry),
        window_bytes=body.window_bytes, stages=_stages(program, build.entry),
        memories=placements, rx_mes=(), fwd_mes=mes, tx_mes=(),
        fwd_mes_per_port=mes_per_port, rx_rings=runtime.rx_rings,
        drop_counter_base=runtime.drop_cnt_base,
        drop_reasons=dict(sorted(counter_names.items())),
        exceptions={value: name for name, (value, _t) in program.enums.get("Exc", {}).items()},
        media=dataclasses.asdict(runtime.layout))
    used = platform.with_ports(kinds)
    return Manifest(path=path, chip=platform.chip, seed=1, ports=used.port_models(),
                    images=[spec], rings=list(runtime.rings), freelists=list(runtime.freelists),
                    overrides=({"sram": {"channel_bytes": channel_bytes}}
                               if channel_bytes != cfg.sram_channel_bytes else {}),
                    program=info, name=build.entry,
                    description=f"{build.entry} linked as a pool for {used.name}")



def pool_mapping(manifest: Manifest) -> Mapping:
    """The ME mapping of a pool manifest, as data for the report and `npkit graph`: every
    pool ME forwards, reading its input port and writing every output port (and the
    exception ring)."""
    info = manifest.program
    if info is None:
        raise LinkError(f"{manifest.path}: no [program] table (not a linked MBL program)")
    outputs = tuple(f"port {q}" for q in range(info.ports))
    exc = f"exception ring {info.layout().exc_ring}"
    receiving = [p for p, rings in enumerate(info.rx_rings) if rings]
    mes = tuple(
        MEAssignment(me, "fwd", info.stages, (f"port {p}",), (*outputs, exc),
                     image=manifest.images[0].path.name)
        for p in receiving for me in info.fwd_mes[p * info.fwd_mes_per_port:
                                                  (p + 1) * info.fwd_mes_per_port])
    return Mapping(info.entry, tuple(range(info.ports)), mes)
