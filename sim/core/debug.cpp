// The debugger's hooks in the dispatch loop (chip.hpp, DebugHooks; docs/sim-core.md,
// "Debug hooks").  Called only from run_me<true>, the copy of the loop run() takes while a
// breakpoint, a step, a watchpoint or coverage is set; the normal loop has none of this.
#include <cstring>

#include "chip.hpp"

namespace npkit {

void Chip::debug_stop(const char* why, const ME& m, int ci, uint32_t pc) {
  if (!debug_.stop.empty()) return;  // the first stop of an instruction is the one reported
  debug_.stop = why;
  debug_.stop_me = m.index;
  debug_.stop_ctx = ci;
  debug_.stop_pc = pc;
  burst_stop_ = 0;  // ends run_me's loops (after this instruction's branch or swap)
}

bool Chip::debug_before(const ME& m, int ci, uint32_t pc, uint64_t done) {
  if (m.index == debug_.lockstep_me) lockstep_before(m, ci, pc);
  const auto& bps = debug_.breakpoints;
  const size_t me = static_cast<size_t>(m.index);
  if (me >= bps.size() || pc >= bps[me].size() || !bps[me][pc]) return false;
  const uint64_t retired = retired_ + done;
  // resuming from this very breakpoint: pass over it once (the retired count tells the
  // same instant from a later visit)
  if (debug_.resume_me == m.index && debug_.resume_retired == retired) {
    debug_.resume_me = -1;
    return false;
  }
  debug_stop("breakpoint", m, ci, pc);
  debug_.resume_me = m.index;
  debug_.resume_retired = retired;
  return true;
}

void Chip::debug_after(ME& m, int ci, uint32_t pc, const Insn& in, uint64_t) {
  if (debug_.coverage) {
    auto& counts = debug_.counts[static_cast<size_t>(m.index)];
    if (pc < counts.size()) counts[pc]++;
  }
  // memories change only through memory commands (written at issue) and, for local
  // memory, through any instruction's operands
  if (!debug_.watches.empty() &&
      (debug_.any_lm_watch || in.handler == isa::OP_SRAM || in.handler == isa::OP_SCRATCH ||
       in.handler == isa::OP_DRAM)) {
    for (size_t w = 0; w < debug_.watches.size(); ++w)
      if (debug_watch_changed(static_cast<int>(w))) {
        if (debug_.stop.empty()) debug_.stop_watch = static_cast<int>(w);
        debug_stop("watch", m, ci, pc);
      }
  }
  if (debug_.step_left && m.index == debug_.step_me && ci == debug_.step_ctx &&
      --debug_.step_left == 0)
    debug_stop("step", m, ci, pc);
  if (m.index == debug_.lockstep_me) {  // the mirror compares after every instruction
    lockstep_after(m, ci, pc);
    debug_stop("lockstep", m, ci, pc);
  }
}

namespace {
// The watched bytes of one watchpoint in the live memory (the range was checked when it
// was set).
const uint8_t* watch_bytes(Chip& chip, const DebugWatch& w) {
  size_t n = 0;
  switch (w.kind) {
    case 0: return reinterpret_cast<const uint8_t*>(chip.sram_data(w.unit, n)) + w.offset;
    case 1: return chip.dram_data(n) + w.offset;
    case 2: return reinterpret_cast<const uint8_t*>(chip.scratch_data(n)) + w.offset;
    default: return reinterpret_cast<const uint8_t*>(chip.lm_data(w.unit, n)) + w.offset;
  }
}
}  // namespace

bool Chip::debug_watch_changed(int index) {
  DebugWatch& w = debug_.watches[static_cast<size_t>(index)];
  const uint8_t* now = watch_bytes(*this, w);
  if (std::memcmp(now, w.seen.data(), w.bytes) == 0) return false;
  std::memcpy(w.seen.data(), now, w.bytes);
  return true;
}

void Chip::debug_capture_watches() {
  debug_.any_lm_watch = false;
  for (DebugWatch& w : debug_.watches) {
    const uint8_t* now = watch_bytes(*this, w);
    w.seen.assign(now, now + w.bytes);
    debug_.any_lm_watch |= w.kind == 3;
  }
}

}  // namespace npkit
