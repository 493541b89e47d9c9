"""Instruction selection of the buffer operations and the receive turn (WIR BufAlloc,
BufStore, BufAttach, BufFree, RxTurnDone) for a body of link/dispatch/pool.uc
(LM_WINDOW_ABI; docs/datapath.md, "Receive stages on the chip").

Each becomes one macro the dispatch's conventions fix: a buffer is a handle of the input
port's SRAM Q-array freelist (`sram[dequeue]` / `sram[enqueue]`, handle 0 = empty), its
data at DRAM byte K_DATA + (handle << BUF_SHIFT), FRAME_BYTES_MAX bytes; the mpacket's bytes
are in its RBUF element (metadata word META_RX_ELEMENT, held by the dispatch until the body
ends) and go to the buffer by one `dram[rbuf_rd]` of 1..16 quadwords (a jump table: the
count is an instruction field).  The numbers are pool.h's names (abi.POOL_NAMES), so the body
assembles only inside pool.uc (or report.wrap_body's harness).  `dram[rbuf_rd]` moves whole
quadwords from and to 8-byte aligned addresses: a store whose `at` or `from` is a constant
that is not a multiple of 8 is a compile error here; a variable one that is not fails at run
time (its `else` runs), where the native target would store it.

The receive stage holds its port's turn until RxTurnDone (pool.uc's REG turn: its state
changes in mpacket order), so what it waits for there it waits for by polling
(Selector.wait_lines), and what need not be waited for in the turn is not: stores of bytes
past the header window (awaited by pool.uc at the body's exit) and a deferred attach's
window read (awaited after the turn has passed).
"""

from __future__ import annotations

from npkit.compiler.mbl.types import META_FIELDS

from .. import wir
from ..abi import (
    META_DRAM_ADDR,
    META_HANDLE,
    META_RX_ELEMENT,
    META_TBUF_MORE,
    RX_KEEP_DESC_BYTE,
    RX_STORE_SIGNAL,
    RX_TURN_LABEL,
    RX_TURN_RET,
    RX_TURN_TAKE_LABEL,
)
from .errors import compile_error
from .mir import MOpnd

IN_PORT = META_FIELDS["in_port"].word
LEN = META_FIELDS["len"].word
QUADWORDS_MAX = 16              # one dram[rbuf_rd]: an RBUF element of up to 128 bytes
WINDOW_WORDS = 14               # the header window pool.uc keeps in *l$index0[2..15]
WINDOW_BYTES = 4 * WINDOW_WORDS
KEEP_QW_SHIFT = 20              # a kept element's descriptor word: element | 1 << 16 | its
KEEP_ELEMENT_BITS = 17          # quadwords past the window << 20 (select_store_keeping)

def _aligned_constant(value: wir.Operand, what: str, ins: wir.Instr) -> None:
    if isinstance(value, int) and value % 8:
        raise compile_error(
            "unsupported", f"buffer.store's {what} is {value}: the chip copies whole "
            "quadwords (dram[rbuf_rd]), so it must be a multiple of 8", ins.loc,
            "store from and to 8-byte boundaries (docs/datapath.md, \"Receive stages on "
            "the chip\")")


def deferrable_attaches(fn: wir.Function) -> set[int]:
    """The BufAttach instructions (by id()) after which every path reaches RxTurnDone
    before any access to the header window (or another buffer operation, or the end):
    their window read from DRAM may complete after the receive turn has passed."""
    blocks = {b.label: b for b in fn.blocks}
    stop = (wir.HdrRead, wir.HdrWrite, wir.PktLoad8, wir.PktStore8, wir.BufAttach,
            wir.BufStore, wir.Ret)

    def clear(block: wir.Block, start: int) -> bool:
        seen: set[str] = set()
        work = [(block, start)]
        while work:
            b, k = work.pop()
            for i in b.instrs[k:]:
                if isinstance(i, wir.RxTurnDone):
                    break
                if isinstance(i, stop):
                    return False
            else:
                for succ in b.successors():
                    if succ not in seen:
                        seen.add(succ)
                        work.append((blocks[succ], 0))
        return True

    return {id(i) for b in fn.blocks for k, i in enumerate(b.instrs)
            if isinstance(i, wir.BufAttach) and clear(b, k + 1)}


def no_store_after(fn: wir.Function, attach: wir.BufAttach) -> bool:
    """Whether no path from `attach` reaches a buffer.store: the mpacket's own RBUF element
    is then no longer needed once the attach is done (the packet is the buffer), so the
    attach frees it (pool.uc's own reassembly frees it before the body too, `later_eop`)."""
    blocks = {b.label: b for b in fn.blocks}
    for b in fn.blocks:
        if attach in b.instrs:
            start, k = b, b.instrs.index(attach) + 1
            break
    else:
        return False
    seen: set[str] = set()
    work = [(start, k)]
    while work:
        b, k = work.pop()
        if any(isinstance(i, wir.BufStore) for i in b.instrs[k:]):
            return False
        for succ in b.successors():
            if succ not in seen:
                seen.add(succ)
                work.append((blocks[succ], 0))
    return True


TURN_WRITES = 2                 # scratch writes of the receive stage left in flight at once


def _turn_write(i: wir.Instr) -> bool:
    return isinstance(i, wir.MemWrite) and i.space == wir.SCRATCH and len(i.srcs) == 1


def turn_write_blocks(fn: wir.Function, turn_blocks: set[str]) -> set[str]:
    """The receive stage's blocks only a path still in the turn reaches (none reached again
    after RxTurnDone): their one-word scratch writes are awaited after the turn has passed
    (BufferSelection.select_turn_write).  Empty when no such block writes scratch."""
    blocks = {b.label: b for b in fn.blocks}
    after: set[str] = set()
    work = [s for b in fn.blocks if any(isinstance(i, wir.RxTurnDone) for i in b.instrs)
            for s in b.successors()]
    while work:
        label = work.pop()
        if label not in after:
            after.add(label)
            work += blocks[label].successors()
    only = turn_blocks - after
    if not any(_turn_write(i) for label in only for i in blocks[label].instrs):
        return set()
    return only


def turn_write_step(pending: frozenset[int], slots: tuple[int, ...]) -> tuple[int, bool]:
    """The slot (its signal) of the next turn write when `pending` are in flight, and
    whether the write waits for that slot's write first (all slots busy)."""
    free = [sig for sig in slots if sig not in pending]
    return (free[0], False) if free else (min(pending), True)


def _turn_writes_before_pass(b: wir.Block) -> int:
    count = 0
    for i in b.instrs:
        if isinstance(i, wir.RxTurnDone):
            break
        count += _turn_write(i)
    return count


def plan_turn_writes(fn: wir.Function, only: set[str], slots: tuple[int, ...]
                     ) -> dict[str, tuple[frozenset[int], frozenset[int]]] | None:
    """Per block of `only`: the turn writes in flight when it starts and those still in
    flight when it leaves for a successor (it waits for the others before its branch), the
    same on every edge, so every wait is unconditional: a block after several predecessors
    starts with what all of them leave in flight.  A block that passes the turn or returns
    waits for all of them.  None when the blocks do not settle (the stage is not selected
    with turn writes then)."""
    blocks = {b.label: b for b in fn.blocks}
    preds: dict[str, list[str]] = {label: [] for label in blocks}
    for b in fn.blocks:
        for succ in b.successors():
            preds[succ].append(b.label)
    entry = fn.blocks[0].label
    ends = {label for label in only if any(isinstance(i, wir.RxTurnDone | wir.Ret)
                                           for i in blocks[label].instrs)}
    all_slots = frozenset(slots)
    start = {label: frozenset() if label == entry else all_slots for label in only}
    leave: dict[str, frozenset[int]] = {}
    for _ in range(4 * len(only) + 4):
        for label in only:
            pending = start[label]
            for _k in range(_turn_writes_before_pass(blocks[label])):
                sig, _wait = turn_write_step(pending, slots)
                pending = pending | {sig}
            if label in ends:
                pending = frozenset()
            for succ in blocks[label].successors():
                pending &= start.get(succ, frozenset())
            leave[label] = pending
        settled = True
        for label in only:
            if label == entry:
                continue
            new = all_slots
            for p in preds[label]:
                new &= leave.get(p, frozenset())
            if new != start[label]:
                start[label], settled = new, False
        if settled:
            return {label: (start[label], leave[label]) for label in only}
    return None


def _window_copy(xfer: str = "$$") -> list[str]:
    return [f"alu[*l$index0[{2 + w}], --, B, {xfer}{w}]" for w in range(WINDOW_WORDS)]


def has_turn_take(fn: wir.Function) -> bool:
    """Whether the receive stage says where its turn starts (media.turn_begin()); else the
    turn starts at the body's entry."""
    return any(isinstance(i, wir.RxTurnTake) for b in fn.blocks for i in b.instrs)


def _holds_turn_at_end(b: wir.Block, at_start: bool) -> bool:
    holds = at_start
    for i in b.instrs:
        if isinstance(i, wir.RxTurnTake):
            holds = True
        elif isinstance(i, wir.RxTurnDone):
            holds = False
    return holds


def blocks_entered_in_turn(fn: wir.Function) -> set[str]:
    """WIR blocks a path enters holding its port's turn: from the entry (or, when the stage
    takes its turn itself, from each RxTurnTake) before RxTurnDone; none when the function
    has no RxTurnDone.  The media-turn check of the front end (sema) makes every path take
    the turn at most once, and pass it after taking it."""
    if not any(isinstance(i, wir.RxTurnDone) for b in fn.blocks for i in b.instrs):
        return set()
    blocks = {b.label: b for b in fn.blocks}
    if has_turn_take(fn):
        work = [s for b in fn.blocks if any(isinstance(i, wir.RxTurnTake) for i in b.instrs)
                and _holds_turn_at_end(b, False) for s in b.successors()]
    else:
        work = [fn.blocks[0].label]
    seen: set[str] = set()
    while work:
        label = work.pop()
        if label in seen:
            continue
        seen.add(label)
        if _holds_turn_at_end(blocks[label], True):
            work += blocks[label].successors()
    return seen


def blocks_in_turn(fn: wir.Function) -> set[str]:
    """WIR blocks with code in the receive stage's turn: those a path enters holding it and
    those that take it (media.turn_begin()); none when the function has no RxTurnDone."""
    entered = blocks_entered_in_turn(fn)
    if not entered and not any(isinstance(i, wir.RxTurnDone) for b in fn.blocks
                               for i in b.instrs):
        return set()
    return entered | {b.label for b in fn.blocks
                      if any(isinstance(i, wir.RxTurnTake) for i in b.instrs)}


class BufferSelection:
    """The buffer operations' and the receive turn's selection, mixed into isel's Selector
    (their own module for size; a mixin so this module need not import isel)."""

    def require_pool(self, ins: wir.Instr) -> None:
        if not self.header_in_lm:
            raise compile_error(
                "unsupported", "buffer operations and receive stages run only in the pool "
                "mapping's body (the header window in local memory)", ins.loc,
                "compile with compile_me(program, entry, LM_WINDOW_ABI) and link with "
                "link(..., pool_mes_per_port=N) (docs/datapath.md); the native target runs it")


    def freelist_address(self) -> MOpnd:
        """The SRAM Q-array address of the input port's freelist (pool.uc's computation)."""
        t = self._new("freelist", gpr_only=True)
        self.op(f"alu[{{0}}, --, B, *l$index1[{IN_PORT}]]\n"
             "alu[{0}, {0}, +, RX_FL_CHANNEL]\n"
             "alu_shf[{0}, FREELIST_QUEUE, OR, {0}, <<26]", [t], defs=(0,), sets_cc=True)
        return t


    def select_alloc(self, ins: wir.BufAlloc) -> None:
        self.require_pool(ins)
        queue = self.freelist_address()
        xs = self.xfer_range(1)
        self._issue(f"sram[dequeue, ${xs.start}, {{0}}, 0]", [queue], xs,
                 [(self._dst(ins.dst), f"${xs.start}")])
        self._sel_Cmp(wir.Cmp(ins.ok, "ne", ins.dst, 0, loc=ins.loc), self.folds, None)


    def select_free(self, ins: wir.BufFree) -> None:
        """Handle 0 is no buffer: nothing goes back (the native target ignores it too)."""
        self.require_pool(ins)
        if ins.handle == 0:
            return
        queue = self.freelist_address()
        handle = self.reg_value(ins.handle)
        kept = self._new("kept", gpr_only=True)
        x, sig, skip = self.xfer_range(1).start, self.signal(), self.label("nofree")
        unkept = self.label("unkept")
        # a buffer that keeps an RBUF element for its window (select_store_keeping) frees
        # it too, and forgets it
        lines = ["alu[--, --, B, {1}]", f"beq[{skip}#]",
                 f"sram[read, ${x}, {{1}}, {RX_KEEP_DESC_BYTE}, 1], sig_done[{sig}]",
                 *self.wait_lines(sig),
                 f"alu[{{2}}, --, B, ${x}]", f"beq[{unkept}#]",
                 f"alu[${x}, --, B, 0]",
                 f"sram[write, ${x}, {{1}}, {RX_KEEP_DESC_BYTE}, 1], sig_done[{sig}]",
                 *self.wait_lines(sig),
                 f"alu_shf[{{2}}, --, B, {{2}}, <<{32 - KEEP_ELEMENT_BITS}]",
                 f"alu_shf[{{2}}, --, B, {{2}}, >>{32 - KEEP_ELEMENT_BITS}]",
                 "msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, {2}]",
                 f"{unkept}#:",
                 f"alu[${x}, --, B, {{1}}]",
                 f"sram[enqueue, ${x}, {{0}}, 0], sig_done[{sig}]", *self.wait_lines(sig),
                 f"{skip}#:"]
        self.op("\n".join(lines), [queue, handle, kept], defs=(2,), uses=(0, 1),
                late_uses=(0, 1), sets_cc=True)


    def _element_address(self, start: MOpnd, add: bool) -> MOpnd:
        """RBUF byte address of mpacket byte `start`: (element << ELEMENT_SHIFT) + start."""
        rbuf = self._new("rbuf", gpr_only=True)
        self.move(rbuf, f"*l$index1[{META_RX_ELEMENT}]")
        self.op("alu_shf[{0}, --, B, {0}, <<16]\nalu_shf[{0}, --, B, {0}, >>16]\n"
             "alu_shf[{0}, --, B, {0}, <<ELEMENT_SHIFT]", [rbuf], defs=(0,), uses=(0,),
             sets_cc=True)
        if add:
            self.alu(rbuf, rbuf, "+", start)
        return rbuf


    def _buffer_address(self, handle: MOpnd) -> MOpnd:
        """DRAM byte address of the buffer's data byte 0."""
        dram, k = self._new("dram", gpr_only=True), self._new("kdata", gpr_only=True)
        self.op("immed32[{0}, K_DATA]", [k], defs=(0,))
        self.op("alu_shf[{0}, {1}, +, {2}, <<BUF_SHIFT]", [dram, k, handle], defs=(0,),
             uses=(1, 2), pairs=((1, 2),), sets_cc=True)
        return dram


    def select_store(self, ins: wir.BufStore) -> None:
        """Bytes the header window holds (`at` < 56) are in DRAM before the store ends: a later
        mpacket's buffer.attach reads them in its receive turn.  Later bytes are copied while
        the body goes on (signal RX_STORE_SIGNAL, flag bit 31 of META_RX_ELEMENT); the dispatch
        waits for them at the body's exit, before the element is freed and before the ALLOC
        turn, so a frame is whole in DRAM when its last mpacket claims the TBUF.  A second store
        of the same mpacket first waits for the one in flight."""
        self.require_pool(ins)
        _aligned_constant(ins.at, "'at'", ins)
        _aligned_constant(ins.start, "'from'", ins)
        if ins.at == 0 and ins.start == 0:
            self.select_store_keeping(ins)
            return
        handle = self.reg_value(ins.handle)
        at, start = self.value(ins.at), self.value(ins.start)    # constants 0..63 stay immediates
        n, e, al = (self._new(h, gpr_only=True) for h in ("n", "end", "align"))
        self.move(n, f"*l$index1[{LEN}]")
        if ins.start != 0:
            self.alu(n, n, "-", start)               # bytes to store (huge: from > len)
        self.alu(e, n, "+", at)
        # the alignment of what is not a constant (constants were checked above)
        variable = [o for o, w in ((at, ins.at), (start, ins.start)) if not isinstance(w, int)]
        if len(variable) == 2:
            self.alu(al, variable[0], "OR", variable[1])
        else:
            self.move(al, variable[0] if variable else 0)
        dram = self._buffer_address(handle)
        if ins.at != 0:
            self.alu(dram, dram, "+", at)            # DRAM byte of buffer byte `at`
        rbuf = self._element_address(start, ins.start != 0)
        at_reg = self.reg_value(ins.at) if not isinstance(ins.at, int) else None
        end, ok = self._dst(ins.end), self._dst(ins.ok)
        fm, q, t, w = (self._new(h, gpr_only=True) for h in ("max", "qw", "jump", "elem"))
        fail, done, out, table, issued, idle, later = (self.label(h) for h in (
            "stfail", "stdone", "stout", "sttab", "stissued", "stidle", "stlater"))
        # operands: 0 end, 1 ok, 2 max, 3 qw, 4 jump, 5 elem | 6 handle, 7 n, 8 e, 9 align,
        # 10 dram, 11 rbuf (, 12 at)
        lines = [
            "alu[--, --, B, {6}]",
            f"beq[{fail}#]",                         # handle 0 is not a buffer
            "immed[{2}, FRAME_BYTES_MAX]",
            "alu[--, {2}, -, {7}]",
            f"bcc[{fail}#]",                         # from > len (n wrapped) or too many bytes
            "alu[--, {2}, -, {8}]",
            f"bcc[{fail}#]",                         # past the buffer's data bytes
            "alu[--, {9}, AND, 7]",
            f"bne[{fail}#]",                         # not quadword aligned
            "alu[{3}, {7}, +, 7]",
            "alu_shf[{3}, --, B, {3}, >>3]",         # quadwords 0..16
            f"beq[{done}#]",
            f"alu[{{5}}, --, B, *l$index1[{META_RX_ELEMENT}]]",
            f"br_bclr[{{5}}, 31, {idle}#]",
            *self.wait_lines(RX_STORE_SIGNAL),           # this mpacket's previous store
            "alu_shf[{5}, --, B, {5}, <<1]",
            "alu_shf[{5}, --, B, {5}, >>1]",
            f"{idle}#:",
            "immed[{2}, 0x8000]",
            "alu_shf[{2}, {5}, OR, {2}, <<16]",
            f"alu[*l$index1[{META_RX_ELEMENT}], --, B, {{2}}]",    # a store in flight
            f"load_addr[{{4}}, {table}#]",
            "alu_shf[{4}, {4}, +, {3}, <<1]",
            "alu[{4}, {4}, -, 2]",
            f"jump[{{4}}, {table}#]",
            f"{table}#:",
        ]
        for count in range(1, QUADWORDS_MAX + 1):
            lines += [f"dram[rbuf_rd, --, {{10}}, {{11}}, {count}], sig_done[{RX_STORE_SIGNAL}]",
                      f"br[{issued}#]"]
        lines.append(f"{issued}#:")
        if at_reg is not None:
            lines += [f"alu[--, {{12}}, -, {WINDOW_BYTES}]", f"bcs[{later}#]"]
        if at_reg is not None or ins.at < WINDOW_BYTES:
            lines += [*self.wait_lines(RX_STORE_SIGNAL),     # window bytes: in DRAM before it ends
                      f"alu[*l$index1[{META_RX_ELEMENT}], --, B, {{5}}]"]
        lines += [f"{later}#:", f"br[{done}#]",
                  f"{fail}#:", "alu[{1}, --, B, 0]", f"br[{out}#]",
                  f"{done}#:", "alu[{0}, --, B, {8}]", "alu[{1}, --, B, 1]", f"{out}#:"]
        ops = [end, ok, fm, q, t, w, handle, n, e, al, dram, rbuf]
        if at_reg is not None:
            ops.append(at_reg)
        uses = tuple(range(6, len(ops)))
        self.op("\n".join(lines), ops, defs=(0, 1, 2, 3, 4, 5), uses=uses, late_uses=uses,
             pairs=((2, 7), (2, 8), (4, 3), (10, 11), (2, 5)), sets_cc=True)


    def select_store_keeping(self, ins: wir.BufStore) -> None:
        """`buffer.store(h, 0, 0)`: the mpacket is the buffer's start, so it stays in its RBUF
        element, which the buffer keeps (RX_KEEP_DESC_BYTE of its descriptor: the element |
        1 << 16 and, at KEEP_QW_SHIFT, the quadwords of its bytes 56..; flag bit 30 of
        META_RX_ELEMENT: pool.uc does not free it at the body's exit): `attach` reads the
        window from there, copies bytes 56.. to DRAM and frees the element, `free` frees it.
        So no DRAM command here, and the descriptor write is not waited for: it stays in
        flight (RX_STORE_SIGNAL, flag bit 31 of META_RX_ELEMENT, from a transfer register
        kept for it, reserve_keep_xfer) until the body's exit, so a first mpacket reaches its
        receive turn at once.  The attach that reads the descriptor runs on the frame's later
        mpacket after its turn, so after this write was issued; the SRAM channel serves
        commands in issue order (the assumption select_turn_write makes for scratch;
        docs/sim-core.md).  pool.uc's own reassembly copies the SOP element's tail at the
        last mpacket too (`later_eop`).
        Only bytes 56.. go to DRAM: 56 bytes written and 56 read less per frame than a
        whole store and a window read from DRAM."""
        handle = self.reg_value(ins.handle)
        n, fm, q, w = (self._new(h, gpr_only=True) for h in ("n", "max", "qw", "elem"))
        self.move(n, f"*l$index1[{LEN}]")
        end, ok = self._dst(ins.end), self._dst(ins.ok)
        x = self.keep_xfer
        fail, out, short, idle = (self.label(h) for h in ("kpfail", "kpout", "kpshort",
                                                          "kpidle"))
        # operands: 0 end, 1 ok, 2 max, 3 qw, 4 elem | 5 handle, 6 n
        lines = [
            "alu[--, --, B, {5}]",
            f"beq[{fail}#]",                         # handle 0 is not a buffer
            "immed[{2}, FRAME_BYTES_MAX]",
            "alu[--, {2}, -, {6}]",
            f"bcc[{fail}#]",                         # too many bytes
            f"alu[{{4}}, --, B, *l$index1[{META_RX_ELEMENT}]]",
            f"br_bclr[{{4}}, 31, {idle}#]",
            *self.wait_lines(RX_STORE_SIGNAL),       # this mpacket's previous store
            "alu_shf[{4}, --, B, {4}, <<1]",
            "alu_shf[{4}, --, B, {4}, >>1]",
            f"{idle}#:",
            f"alu[{{3}}, {{6}}, -, {WINDOW_BYTES - 7}]",
            f"bge[{short}#]",
            "immed[{3}, 0]",                         # the window holds it all
            f"{short}#:",
            "alu_shf[{3}, --, B, {3}, >>3]",         # quadwords of bytes 56..: 0..9
            "alu_shf[{2}, --, B, {4}, <<2]",
            "alu_shf[{2}, --, B, {2}, >>2]",         # the element | 1 << 16, no flags
            f"alu_shf[${x}, {{2}}, OR, {{3}}, <<{KEEP_QW_SHIFT}]",
            f"sram[write, ${x}, {{5}}, {RX_KEEP_DESC_BYTE}, 1], sig_done[{RX_STORE_SIGNAL}]",
            "immed[{2}, 0xC000]",                    # bit 30: kept for the buffer, bit 31:
            "alu_shf[{4}, {4}, OR, {2}, <<16]",      # its descriptor write in flight
            f"alu[*l$index1[{META_RX_ELEMENT}], --, B, {{4}}]",
            "alu[{0}, --, B, {6}]", "alu[{1}, --, B, 1]", f"br[{out}#]",
            f"{fail}#:", "alu[{1}, --, B, 0]", f"{out}#:"]
        ops = [end, ok, fm, q, w, handle, n]
        uses = (5, 6)
        self.op("\n".join(lines), ops, defs=(0, 1, 2, 3, 4), uses=uses, late_uses=uses,
                pairs=((2, 6), (2, 4), (2, 3)), sets_cc=True)

    def reserve_turn_writes(self) -> tuple[int, ...]:
        """Signals and transfer registers (TURN_WRITES of each) kept for the receive stage's
        scratch writes that stay in flight past its turn, and their plan (plan_turn_writes);
        none when it has none.  First the transfer register of a keeping store's descriptor
        write (reserve_keep_xfer), which also stays in flight past the turn."""
        self.reserve_keep_xfer()
        free = [sig for sig in self.abi.signals if sig not in self.slot_signals]
        if not self.turn_write_blocks or len(free) <= TURN_WRITES:
            return ()
        sigs = tuple(free[-TURN_WRITES:])
        plan = plan_turn_writes(self.fn, self.turn_write_blocks, sigs)
        if plan is None:
            return ()
        self.turn_plan = plan
        self.slot_signals |= set(sigs)
        self.signals_used |= set(sigs)
        self.xfer_limit -= TURN_WRITES
        self.turn_xfer = {sig: self.xfer_limit + k for k, sig in enumerate(sigs)}
        return sigs


    def reserve_keep_xfer(self) -> None:
        """The transfer register of `buffer.store(h, 0, 0)`'s descriptor write
        (select_store_keeping), when the function has such a store: the write is left in
        flight until the body's exit, so no other command may write that register before."""
        self.keep_xfer: int | None = None
        if any(isinstance(i, wir.BufStore) and i.at == 0 and i.start == 0
               for b in self.fn.blocks for i in b.instrs):
            self.xfer_limit -= 1
            self.keep_xfer = self.xfer_limit


    def start_turn_writes(self, label: str) -> None:
        """At a block's start: the turn writes in flight (the plan's)."""
        plan = self.turn_plan.get(label) if self.turn_write_slots else None
        self.turn_pending = plan[0] if plan else frozenset()


    def select_turn_write(self, ins: wir.MemWrite) -> bool:
        """A one-word scratch write of the receive stage, in its turn: issued there and
        awaited only after the turn has passed (drain_turn_writes at RxTurnDone).  Its
        order against the port's next mpacket is the scratch unit's: that mpacket's
        stage reads the word only after taking the turn, so after this write was issued,
        and the scratch unit performs a thread's commands in the order they were issued
        (the same assumption as pool.uc's body_exit, which passes the turn before waiting
        for the stage's scratch commands).  Each write takes one of TURN_WRITES slots
        (signal, transfer register), waiting first when all are in flight; which are in
        flight is known at compile time on every path (plan_turn_writes), so no wait is
        conditional.  False: not such a write (selected as any other)."""
        if (not self.spinning or self.current_label not in self.turn_plan
                or not self.turn_write_slots or ins.space != wir.SCRATCH
                or len(ins.srcs) != 1):
            return False
        sig, wait = turn_write_step(self.turn_pending, self.turn_write_slots)
        x = self.turn_xfer[sig]
        a, b = self.address(ins.space, ins.addr)
        if wait:
            self.op("\n".join(self.wait_lines(sig)), [])
        self.move(f"${x}", ins.srcs[0])
        self.op(f"scratch[write, ${x}, {{0}}, {{1}}, 1], sig_done[{sig}]", [a, b],
                uses=(0, 1), pairs=((0, 1),), kind="mem", signals=(sig,))
        self.turn_pending = self.turn_pending | {sig}
        return True


    def drain_turn_writes(self, keep: frozenset[int] = frozenset()) -> None:
        """Wait for the receive stage's scratch writes in flight but `keep`: by polling while
        the turn is held (before a branch, a return inside the stage), else by sleeping."""
        waits = sorted(self.turn_pending - keep)
        if waits and self.spinning:
            self.op("\n".join(line for sig in waits for line in self.wait_lines(sig)), [])
        elif waits:
            self.op(f"ctx_arb[{', '.join(map(str, waits))}]", [], kind="wait",
                    signals=tuple(waits))
        self.turn_pending = self.turn_pending & keep


    def leave_turn_block(self, branch: wir.Instr) -> None:
        """Before a turn block's branch: wait for what its successors do not expect in
        flight.  A jump to the block that passes the turn (its first instruction) passes it
        here already, then sleeps for them: the turn need not wait (the later pass finds
        the turn gone; pool.uc's rx_turn_pass passes once)."""
        plan = self.turn_plan.get(self.current_label) if self.turn_write_slots else None
        if plan is None or not self.spinning:
            return
        target = self.fn.block(branch.target) if isinstance(branch, wir.Jump) else None
        if (self.turn_pending - plan[1] and target is not None and target.instrs
                and isinstance(target.instrs[0], wir.RxTurnDone)):
            self.spinning = False
            back = self.label("rxturn")
            self.op("\n".join([f"load_addr[{RX_TURN_RET}, {back}#]", f"br[{RX_TURN_LABEL}#]",
                               f"{back}#:"]), [])
        self.drain_turn_writes(plan[1])


    def reserve_attach_signal(self) -> int | None:
        """A body signal kept for deferred window reads (none are issued otherwise): every
        other command of the body uses another, so the read may stay in flight across blocks."""
        if not self.deferred_attaches:
            return None
        free = [sig for sig in self.abi.signals if sig not in self.slot_signals]
        self.slot_signals.add(free[-1])
        self.signals_used.add(free[-1])
        return free[-1]


    def select_attach(self, ins: wir.BufAttach) -> None:
        """The packet becomes the buffer's first `length` bytes (at most FRAME_BYTES_MAX): its
        header window read from DRAM into local memory, its length, its buffer (a buffer the
        packet had goes back first), its DRAM address and TBUF element count for pool.uc's
        transmit; a packet no longer than the window keeps no buffer.  When nothing reads the
        window before the receive stage ends (deferrable_attaches), the read completes after
        the turn has passed (select_rx_turn_done; flag: bit 31 of META_TBUF_MORE)."""
        self.require_pool(ins)
        self.flush()
        deferred = id(ins) in self.deferred_attaches
        handle, length = self.reg_value(ins.handle), self.reg_value(ins.length)
        queue = self.freelist_address()
        n, dram, k, fm = (self._new(h, gpr_only=True) for h in ("n", "dram", "kdata", "max"))
        kept = self._new("kept", gpr_only=True)
        x, sig = self.xfer_range(1).start, self.signal()
        rsig = self.attach_signal if deferred else sig
        old, out, fits, short = (self.label(h) for h in ("atold", "atout", "atfits", "atshort"))
        fromdram, windowed, noflag, copied = (self.label(h) for h in (
            "atdram", "atwin", "atnoflag", "atcopied"))
        nocopy, table, issued, copied_tail = (self.label(h) for h in (
            "atnocopy", "attab", "atissued", "attail"))
        csig = next(s for s in self.abi.signals if s not in self.slot_signals and s != sig)
        self.signals_used.add(csig)
        # operands: 0 n, 1 dram, 2 kdata, 3 max | 4 handle, 5 length, 6 queue | 7 kept
        lines = [
            "alu[{1}, --, B, {4}]",
            f"beq[{out}#]",                          # not a buffer: nothing changes
            f"alu[${x}, --, B, *l$index1[{META_HANDLE}]]",
            f"beq[{old}#]",
            f"sram[enqueue, ${x}, {{6}}, 0], sig_done[{sig}]",
            *self.wait_lines(sig),
            f"{old}#:",
            # the window from the RBUF element the buffer keeps (select_store_keeping),
            # which is then freed and forgotten; else from DRAM
            f"sram[read, ${x}, {{4}}, {RX_KEEP_DESC_BYTE}, 1], sig_done[{sig}]",
            *self.wait_lines(sig),
            f"alu[{{7}}, --, B, ${x}]",
            f"alu[*l$index1[{META_HANDLE}], --, B, {{4}}]",
            "immed32[{2}, K_DATA]",
            "alu_shf[{1}, {2}, +, {4}, <<BUF_SHIFT]",
            f"alu[*l$index1[{META_DRAM_ADDR}], --, B, {{1}}]",
            "alu[--, --, B, {7}]",
            f"beq[{fromdram}#]",
            # its bytes 56.. (quadwords at KEEP_QW_SHIFT) RBUF -> DRAM while the descriptor
            # is cleared and the window read, all before the element is freed
            "alu_shf[{2}, --, B, {7}, <<16]",
            "alu_shf[{2}, --, B, {2}, >>16]",
            "alu_shf[{2}, --, B, {2}, <<ELEMENT_SHIFT]",
            f"alu_shf[{{3}}, --, B, {{7}}, >>{KEEP_QW_SHIFT}]",
            f"beq[{nocopy}#]",
            f"alu[{{2}}, {{2}}, +, {WINDOW_BYTES}]",    # the element's byte 56
            f"alu[{{1}}, {{1}}, +, {WINDOW_BYTES}]",    # the buffer's byte 56
            f"load_addr[{{0}}, {table}#]",
            "alu_shf[{0}, {0}, +, {3}, <<1]",
            "alu[{0}, {0}, -, 2]",
            f"jump[{{0}}, {table}#]",
            f"{table}#:",
        ]
        for count in range(1, QUADWORDS_MAX + 1):
            lines += [f"dram[rbuf_rd, --, {{1}}, {{2}}, {count}], sig_done[{csig}]",
                      f"br[{issued}#]"]
        unkeep = [f"alu[${x}, --, B, 0]",
                  f"sram[write, ${x}, {{4}}, {RX_KEEP_DESC_BYTE}, 1], sig_done[{sig}]",
                  *self.wait_lines(sig),
                  f"msf[read, $0, {{2}}, 0, {WINDOW_WORDS}], sig_done[{sig}]",
                  *self.wait_lines(sig)]
        lines += [
            f"{issued}#:",
            f"alu[{{2}}, {{2}}, -, {WINDOW_BYTES}]",
            *unkeep, *self.wait_lines(csig),         # the tail copy waited for on its path
            f"br[{copied_tail}#]",
            f"{nocopy}#:",
            *unkeep,
            f"{copied_tail}#:",
            *_window_copy("$"),
            f"alu_shf[{{7}}, --, B, {{7}}, <<{32 - KEEP_ELEMENT_BITS}]",
            f"alu_shf[{{7}}, --, B, {{7}}, >>{32 - KEEP_ELEMENT_BITS}]",
            "msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, {7}]",
            f"br[{windowed}#]",
            f"{fromdram}#:",
        ]
        if deferred:
            lines.append(f"dram[read, $$0, {{1}}, 0, {WINDOW_WORDS // 2}], sig_done[{rsig}]")
        else:
            lines += [f"dram[read, $$0, {{1}}, 0, {WINDOW_WORDS // 2}], sig_done[{sig}]",
                      *self.wait_lines(sig), *_window_copy()]
        lines.append(f"{windowed}#:")
        if no_store_after(self.fn, ins):
            # the mpacket's own element (unless it is the kept one, freed above) goes back
            # now, its store done, not at the body's exit: it is not held through the body
            ownkept, ownidle, ownfreed = (self.label(h) for h in ("atownkept", "atownidle",
                                                                  "atownfreed"))
            lines += [
                f"alu[{{2}}, --, B, *l$index1[{META_RX_ELEMENT}]]",
                f"beq[{ownfreed}#]",
                f"br_bclr[{{2}}, 31, {ownidle}#]",
                *self.wait_lines(RX_STORE_SIGNAL),   # its store in flight
                f"{ownidle}#:",
                f"br_bset[{{2}}, 30, {ownkept}#]",
                "alu_shf[{2}, --, B, {2}, <<2]",
                "alu_shf[{2}, --, B, {2}, >>2]",
                "msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, {2}]",
                f"{ownkept}#:",
                f"immed[*l$index1[{META_RX_ELEMENT}], 0]",
                f"{ownfreed}#:",
            ]
        lines += [
            "immed[{3}, FRAME_BYTES_MAX]",
            "alu[{0}, --, B, {5}]",
            "alu[--, {3}, -, {0}]",
            f"bcs[{fits}#]",
            "alu[{0}, --, B, {3}]",
            f"{fits}#:",
            f"alu[*l$index1[{LEN}], --, B, {{0}}]",
            f"alu[--, {{0}}, -, {WINDOW_BYTES + 1}]",
            f"bcc[{short}#]",
            "alu[{2}, {0}, -, 1]",
            "alu_shf[{2}, --, B, {2}, >>ELEMENT_SHIFT]",
        ]
        if deferred:                                 # a window read in flight
            lines += ["alu[--, --, B, {7}]", f"bne[{noflag}#]",
                      "immed[{3}, 0x8000]", "alu_shf[{2}, {2}, OR, {3}, <<16]",
                      f"{noflag}#:"]
        lines += [
            f"alu[*l$index1[{META_TBUF_MORE}], --, B, {{2}}]",
            f"br[{out}#]",
            f"{short}#:",                            # the window holds it all: no tail
            f"immed[*l$index1[{META_TBUF_MORE}], 0]",
        ]
        if deferred:                                 # the buffer goes back: its read first
            lines += ["alu[--, --, B, {7}]", f"bne[{copied}#]",
                      *self.wait_lines(rsig), *_window_copy(), f"{copied}#:"]
        lines += [
            f"alu[${x}, --, B, *l$index1[{META_HANDLE}]]",
            f"sram[enqueue, ${x}, {{6}}, 0], sig_done[{sig}]",
            *self.wait_lines(sig),
            f"immed[*l$index1[{META_HANDLE}], 0]",
            f"{out}#:",
        ]
        uses = (4, 5, 6)
        self.op("\n".join(lines), [n, dram, k, fm, handle, length, queue, kept],
                defs=(0, 1, 2, 3, 7), uses=uses, late_uses=uses,
                pairs=((2, 1), (3, 0), (2, 3), (2, 4)), sets_cc=True)


    def take_turn_lines(self) -> list[str]:
        """Call the dispatch's RX_TURN_TAKE_LABEL: wait for the port's receive turn (pool.uc
        takes its REG token and re-registers the thread there)."""
        back = self.label("rxtake")
        return [f"load_addr[{RX_TURN_RET}, {back}#]", f"br[{RX_TURN_TAKE_LABEL}#]",
                f"{back}#:"]

    def select_rx_turn_take(self, ins: wir.RxTurnTake) -> None:
        """media.turn_begin(): what the stage did before (a buffer taken, a store of the
        window's bytes) completes first, sleeping (the turn is not held yet); from here on
        the stage waits by polling, and its state reads and writes are in mpacket order."""
        self.require_pool(ins)
        self.flush()
        self.op("\n".join(self.take_turn_lines()), [])
        self.spinning = True

    def select_rx_turn_done(self, ins: wir.RxTurnDone) -> None:
        """Call the dispatch's RX_TURN_LABEL: the port's next mpacket may run its receive
        stage.  Commands in flight stay in flight (the call uses no body resource)."""
        self.require_pool(ins)
        self.spinning = False                  # the rest runs outside the turn
        back = self.label("rxturn")
        lines = [f"load_addr[{RX_TURN_RET}, {back}#]", f"br[{RX_TURN_LABEL}#]", f"{back}#:"]
        if self.attach_signal is None:
            self.op("\n".join(lines), [])
            self.drain_turn_writes()
            return
        t, done = self._new("more", gpr_only=True), self.label("rxwin")
        lines += [f"alu[{{0}}, --, B, *l$index1[{META_TBUF_MORE}]]",   # a window read in flight
                  f"br_bclr[{{0}}, 31, {done}#]", f"ctx_arb[{self.attach_signal}]", *_window_copy(),
                  "alu_shf[{0}, --, B, {0}, <<1]", "alu_shf[{0}, --, B, {0}, >>1]",
                  f"alu[*l$index1[{META_TBUF_MORE}], --, B, {{0}}]", f"{done}#:"]
        self.op("\n".join(lines), [t], defs=(0,), sets_cc=True)
        self.drain_turn_writes()
