"""The linker: a compiled body + the dispatch loop + a platform's media stages -> a Manifest
(docs/me-backend.md, "Dispatch and link"; docs/link.md).

`link(program, build, platform)` takes the ME back end's output (`compile_me(...)`, an
MEBuild) and returns the same Manifest hand-written microcode uses: the three images
assembled (receive, the forwarding chain, transmit), the scratch rings, the buffer
freelists, the chip overrides, the ports, and a [program] table with what the compiled
program's runtime needs (memories by MBL name, drop counters by reason, exception codes,
which MEs forward for which port, the media numbers as linked).  `link_body` is the same
for a .uc body given as text (the tests' hand-written bodies).

The pipeline's own declarations are honoured or rejected at their MBL location:
`ports a..b` selects ports a..b of the platform (a = 0; b + 1 = 2 or 4; the platform must
have them), and `on me(...)` placements are rejected (the linker places stages itself).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import WINDOW_MAX_BYTES, Mapping, MEAssignment
from npkit.compiler.me.metasetup import MetaSetup, meta_setup
from npkit.compiler.uc import AsmError, Image, assemble_file
from npkit.sim.config import ChipConfig

from .errors import LinkError
from .header import body_defines, layout_header
from .manifest import ImageSpec, Manifest
from .plan import (
    BAD_PORT,
    FOUR_PORTS,
    MAX_FWD_MES_ONE_RX,
    NO_VERDICT,
    RuntimeLayout,
    memory_map,
    plan_runtime,
    sram_channel_bytes,
)
from .platform import DEFAULT_PLATFORM, Platform, as_platform
from .program import ProgramInfo
from .sram import placed, same_sram_layout

if TYPE_CHECKING:
    from npkit.compiler.me import MEBuild

LINK_DIR = Path(__file__).resolve().parent
MAPPED_PORTS = (2, FOUR_PORTS)      # the port counts the media stages' layouts cover


# --------------------------------------------------------------------------- declarations
def _declaration_error(kind: str, message: str, span: SourceLocation,
                       hint: str) -> CompileError:
    try:
        sources = {span.file: Path(span.file).read_text(encoding="utf-8")}
    except OSError:
        sources = {}
    return CompileError([Diagnostic(message, span, hint, kind=kind)], sources)


def served_ports(program: Program, entry: str, platform: Platform) -> tuple[str, ...]:
    """The port kinds the entry is linked for: the platform's, or the first b + 1 of them
    for a pipeline that declares `ports 0..b`.  A declaration the platform cannot meet,
    or an `on me(...)` placement, is a CompileError at its MBL location."""
    pipeline = program.pipelines.get(entry)
    if pipeline is None:                    # a block: every port of the platform
        return platform.ports
    for stage in pipeline.stages:
        if stage.mes:
            raise _declaration_error(
                "link-on-me", f"stage {stage.name}: `on me({', '.join(map(str, stage.mes))})` "
                "is not implemented by the linker (it maps every stage of the pipeline to "
                "each forwarding ME itself)", stage.span,
                "remove `on me(...)`; the link option fwd_mes_per_port sets how many MEs "
                "forward a port")
    if pipeline.ports is None:
        return platform.ports
    first, last = pipeline.ports
    have = len(platform.ports)
    if first != 0:
        raise _declaration_error(
            "link-ports", f"pipeline {entry} declares ports {first}..{last}: the linker serves "
            "ports from port 0", pipeline.span, f"declare `ports 0..{last};`")
    if last + 1 not in MAPPED_PORTS:
        raise _declaration_error(
            "link-ports", f"pipeline {entry} declares {last + 1} ports: the linker maps 2 or "
            "4 (the media stages' layouts)", pipeline.span,
            "declare `ports 0..1;` or `ports 0..3;`")
    if last >= have:
        raise _declaration_error(
            "link-ports", f"pipeline {entry} declares ports 0..{last} but platform "
            f"{platform.name} has {have} ports (0..{have - 1})", pipeline.span,
            f"link for a platform with {last + 1} ports (e.g. --platform "
            f"ixp2800-{last + 1}x10gbe) or declare `ports 0..{have - 1};`")
    return platform.ports[:last + 1]


def _source_of(program: Program, entry: str) -> str:
    """The MBL file of the entry, absolute when it is a file ("" when unknown)."""
    decl = program.pipelines.get(entry) or program.blocks.get(entry)
    if decl is None:
        return ""
    path = Path(decl.span.file)
    return str(path.resolve()) if path.is_file() else str(path)


# --------------------------------------------------------------------------- images
def _assemble(build: Path, header: str, body: str, runtime: RuntimeLayout,
              platform: Platform) -> list[ImageSpec]:
    media = platform.media
    (build / "layout.h").write_text(header, encoding="utf-8")
    (build / "body.uc").write_text(body, encoding="utf-8")
    (build / "rx.uc").write_text(f'#include "layout.h"\n#include "{media.rx.name}"\n',
                                 encoding="utf-8")
    (build / "fwd.uc").write_text('#include "dispatch/fwd.uc"\n', encoding="utf-8")
    (build / "tx.uc").write_text(f'#include "layout.h"\n#include "{media.tx.name}"\n',
                                 encoding="utf-8")
    dirs = (str(build), str(media.folder), str(LINK_DIR))
    specs = []
    for name, mes in (("rx", runtime.rx_mes), ("fwd", runtime.fwd_mes),
                      ("tx", runtime.tx_mes)):
        path = build / f"{name}.uc"
        image: Image = assemble_file(path, dirs)
        specs.append(ImageSpec(path, tuple(mes), f"linked {name} image", image))
    return specs


def _tbuf_elements(cfg: ChipConfig, ports: int) -> int:
    """TBUF elements per port (the MSF's partitions), a power of two for tx_eth.uc."""
    elements = int(cfg.raw["msf"]["tbuf_bytes"]) // int(cfg.raw["msf"]["element_bytes"]) // ports
    if elements & (elements - 1):
        raise LinkError(f"{elements} TBUF elements per port: tx_eth.uc needs a power of two")
    return elements


def _stages(program: Program, entry: str) -> tuple[str, ...]:
    edges = program.pipeline_edges.get(entry)
    return tuple(edges) if edges else (entry,)


def link_body(program: Program, body_uc: str, window_bytes: int, *, pipeline: str,
              platform: Platform | str = DEFAULT_PLATFORM,
              build_dir: str | Path | None = None, fwd_mes_per_port: int | None = None,
              meta: MetaSetup | None = None, rx_ports: int | None = None,
              buf_bytes: int | None = None) -> Manifest:
    """Link a compiled body (the back end's .uc fragment) for `platform`'s ports (or the
    ones the pipeline declares), `fwd_mes_per_port` forwarding MEs per input port (default
    the platform's; a chain that keeps the port's order).  `build_dir` keeps the generated
    files (layout.h, body.uc, rx.uc, fwd.uc, tx.uc); by default they go to a temporary
    folder.  `meta`: the body's metadata set-up (`meta_setup(wir)`; default: the one that
    suits any body).  `rx_ports=1`: only port 0 receives (a chip of the dual system:
    one chain of up to MAX_FWD_MES_ONE_RX forwarding MEs; docs/link.md).  `buf_bytes`:
    buffers of that size (a power of two up to 16 KB) instead of 2 KB, for ports whose
    MTU needs them (docs/link.md, "Buffer size").  Raises LinkError
    (layout), CompileError (a declaration the platform cannot meet) or the assembler's
    AsmError."""
    platform = as_platform(platform)
    if window_bytes % 8 or not 0 <= window_bytes <= WINDOW_MAX_BYTES:
        raise LinkError(f"header window of {window_bytes} bytes: 0..{WINDOW_MAX_BYTES}, "
                        "a multiple of 8")
    kinds = served_ports(program, pipeline, platform)
    ports = len(kinds)
    cfg = platform.chip_config()
    if placed(program, cfg) is not program:
        raise LinkError(f"the SRAM memories of {pipeline} lie past the chip's "
                        f"{cfg.sram_channel_bytes:,}-byte SRAM channels: place them before "
                        "compiling the body (link() does: npkit.link.sram.placed)")
    placements = memory_map(program)
    channel_bytes = sram_channel_bytes(placements, cfg)
    per_port = platform.fwd_mes_per_port if fwd_mes_per_port is None else fwd_mes_per_port
    one_rx = rx_ports is not None and rx_ports < ports
    if one_rx and per_port > MAX_FWD_MES_ONE_RX:
        raise LinkError(f"fwd_mes_per_port={per_port} with one receive port: "
                        f"1..{MAX_FWD_MES_ONE_RX} (the dispatch loop tests at most "
                        f"{MAX_FWD_MES_ONE_RX} RX rings)")
    if not one_rx and per_port > platform.max_fwd_mes_per_port:
        raise LinkError(f"fwd_mes_per_port={per_port}: platform {platform.name} allows at most "
                        f"{platform.max_fwd_mes_per_port} ({len(platform.ports)} ports on "
                        f"{platform.mes} MEs, and the media stages' rings)")
    runtime = plan_runtime(program, ports, cfg, channel_bytes, per_port,
                           platform.descriptor_align, rx_ports, buf_bytes)
    used = len(runtime.rx_mes) + len(runtime.fwd_mes) + len(runtime.tx_mes)
    if used > platform.mes:
        raise LinkError(f"{used} MEs needed ({ports} ports, {per_port} forwarding MEs a port) "
                        f"but platform {platform.name} gives {platform.mes}")
    reasons = len(program.reasons.ids)
    header = layout_header(runtime, window_bytes, reasons, pipeline,
                           body_defines(body_uc, meta or MetaSetup()),
                           _tbuf_elements(cfg, ports))
    if build_dir is None:
        with tempfile.TemporaryDirectory(prefix="npkit-link-") as tmp:
            images = _assemble(Path(tmp), header, body_uc, runtime, platform)
            path = Path(tmp) / "manifest.toml"
    else:
        Path(build_dir).mkdir(parents=True, exist_ok=True)
        images = _assemble(Path(build_dir), header, body_uc, runtime, platform)
        path = Path(build_dir) / "manifest.toml"
    overrides = ({"sram": {"channel_bytes": channel_bytes}}
                 if channel_bytes != cfg.sram_channel_bytes else {})
    counter_names = {0: NO_VERDICT, reasons + 1: BAD_PORT}
    counter_names.update({i: name for name, i in program.reasons.ids.items()})
    info = ProgramInfo(
        entry=pipeline, source=_source_of(program, pipeline), window_bytes=window_bytes,
        stages=_stages(program, pipeline), memories=placements, rx_mes=runtime.rx_mes,
        fwd_mes=runtime.fwd_mes, tx_mes=runtime.tx_mes, fwd_mes_per_port=per_port,
        rx_rings=runtime.rx_rings, drop_counter_base=runtime.drop_cnt_base,
        drop_reasons=dict(sorted(counter_names.items())),
        exceptions={value: name for name, (value, _t) in program.enums.get("Exc", {}).items()},
        media=dataclasses.asdict(runtime.layout))
    used_platform = platform.with_ports(kinds)
    return Manifest(path=path, chip=platform.chip, seed=1, ports=used_platform.port_models(),
                    images=images, rings=list(runtime.rings),
                    freelists=list(runtime.freelists), overrides=overrides, program=info,
                    name=pipeline, description=f"{pipeline} linked for {used_platform.name}")


def link(program: Program, build: MEBuild, platform: Platform | str = DEFAULT_PLATFORM, *,
         build_dir: str | Path | None = None,
         fwd_mes_per_port: int | None = None, rx_ports: int | None = None,
         pool_mes_per_port: int | None = None, big_channels: bool = True,
         buf_bytes: int | None = None) -> Manifest:
    """Link one compiled entry (`compile_me(program, entry)`).  A body that overflows the
    control store is a CompileError at the entry's MBL declaration (the assembler's
    message would point into the generated body).  `pool_mes_per_port=N`: the compiled
    data path instead (docs/datapath.md; npkit.link.pool: the entry recompiled with the
    window in local memory, N MEs per port receive, forward and transmit).  A platform
    with `[media] compiled = true` links a pipeline whose first stage receives in MBL
    that way by default (its `pool_mes_per_port`, or `fwd_mes_per_port` when given).
    The program's SRAM memories go on the chip's channels (link/sram.py; the entry is
    compiled again when that moves them); SRAM memories that do not fit are a
    CompileError (`link-sram`) unless `big_channels` lets the flat layout run on 64 MB
    channels.  `buf_bytes`: the buffer size of the rings mapping (link_body)."""
    platform = as_platform(platform)
    program = placed(program, platform.chip_config(), big_channels=big_channels)
    from .pool import selects_pool
    if pool_mes_per_port is None and selects_pool(program, build.entry, platform):
        # the platform links MBL receive/transmit as the pool (docs/link.md, "Platforms")
        kinds = served_ports(program, build.entry, platform)
        pool_mes_per_port = fwd_mes_per_port or platform.pool_mes(len(kinds),
                                                                  rx_ports or len(kinds))
    if pool_mes_per_port is not None:
        if buf_bytes is not None:
            raise LinkError("buf_bytes: the buffer size is an option of the rings mapping; "
                            "the compiled data path (pool_mes_per_port) keeps 2 KB buffers")
        served_ports(program, build.entry, platform)   # declarations, at MBL
        from npkit.compiler.me.abi import LM_WINDOW_ABI

        from .pool import link_pool
        if build.body.header_lm_word is None or not same_sram_layout(program, build.program):
            build = compile_me(program, build.entry, LM_WINDOW_ABI)
        return link_pool(program, build, platform, mes_per_port=pool_mes_per_port,
                         build_dir=build_dir, rx_ports=rx_ports)
    if not same_sram_layout(program, build.program):
        build = compile_me(program, build.entry)   # the ME code holds the addresses
    try:
        return link_body(program, build.body.uc, build.body.window_bytes, pipeline=build.entry,
                         platform=platform, build_dir=build_dir,
                         fwd_mes_per_port=fwd_mes_per_port, meta=meta_setup(build.wir),
                         rx_ports=rx_ports, buf_bytes=buf_bytes)
    except AsmError as e:
        overflow = next((d for d in e.diagnostics
                         if d.message.startswith("control store overflow")), None)
        if overflow is None:
            raise
        where = build.wir.loc or SourceLocation(build.entry, 0)
        raise _declaration_error(
            "me-control-store",
            f"{build.entry} does not fit in the control store: its body is "
            f"{build.body.instructions} instructions, and with the dispatch loop "
            f"{overflow.message.removeprefix('control store overflow: ')}",
            where, "shorten the block (fewer unrolled loop trips, smaller "
            "functions) or split the pipeline") from None


# --------------------------------------------------------------------------- mapping
def mapping(manifest: Manifest) -> Mapping:
    """The ME mapping of a linked manifest, as data for the report and `npkit graph`."""
    info = manifest.program
    if info is None:
        raise LinkError(f"{manifest.path}: no [program] table (not a linked MBL program)")
    if [spec.path.name for spec in manifest.images] == ["pool.uc"]:
        from .pool import pool_mapping  # the compiled data path's mapping
        return pool_mapping(manifest)
    lay = info.layout()
    ports = info.ports
    tx_rings = tuple(f"ring {lay.tx_ring(q)}" for q in range(ports))
    names = [spec.path.name for spec in manifest.images]
    mes = [MEAssignment(me, "rx", (), (f"port {p}",),
                        tuple(f"ring {r}" for r in info.rx_rings[p]), image=names[0])
           for p, me in enumerate(info.rx_mes[:ports])]
    for p in range(ports):
        chain = info.chain(p)
        for i, me in enumerate(chain):
            reads = (f"ring {info.rx_rings[p][i]}",) + ((f"nn {me}",) if i else ())
            writes = ((*tx_rings, f"exception ring {lay.exc_ring}") if me == chain[-1]
                      else (f"nn {me + 1}",))
            mes.append(MEAssignment(me, "fwd", info.stages, reads, writes, image=names[1]))
    for q, me in enumerate(info.tx_mes):
        mes.append(MEAssignment(me, "tx", (), (f"ring {lay.tx_ring(q)}",), (f"port {q}",),
                                image=names[2]))
    return Mapping(info.entry, tuple(range(ports)), tuple(mes))
