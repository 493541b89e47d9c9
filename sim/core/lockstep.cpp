// The lockstep log: what the RTL mirror of one ME (sim/rtl/lockstep.py; docs/rtl.md,
// "Lockstep inside the chip") needs to replay that ME's run and compare it.  Called only
// from the debug-mode dispatch loop (debug.cpp) and, for deliveries, from Chip::deliver
// behind one compare; with no lockstep ME set nothing here runs.
#include "chip.hpp"

namespace npkit {

namespace {

bool is_command(uint16_t op) {
  return op == isa::OP_SRAM || op == isa::OP_SCRATCH || op == isa::OP_DRAM || op == isa::OP_MSF ||
         op == isa::OP_HASH;
}

// The LM word an operand names, or 0 beyond local memory (the handler faults there).
uint32_t lm_peek(const ME& m, uint32_t byte_addr, uint32_t k) {
  const uint32_t w = (byte_addr >> 2) + k;
  return w < m.lm.size ? m.lm[w] : 0;
}

// The effective LM_ADDR (a pending write lands once its delay is over), without applying it.
uint32_t lm_pointer(const Context& c, int which) {
  return c.lm_apply_at[which] <= c.instructions ? c.lm_pending[which] : c.lm_addr[which];
}

// An operand's value as the handler will read it, without the read's side effects; the
// pointers and the NN ring index move as the read would move them (A is read before B).
struct Peek {
  const Chip& chip;
  const ME& m;
  int ci;
  uint32_t ptr[2];
  uint32_t nn_get;

  uint32_t read(Opnd o) {
    const size_t p = Chip::phys(m, ci, o.idx);
    switch (o.kind) {
      case OpKind::GprA: return m.gpr_a()[p];
      case OpKind::GprB: return m.gpr_b()[p];
      case OpKind::XferS: return m.sram_in()[p];
      case OpKind::XferD: return m.dram_in()[p];
      case OpKind::Nn: return m.nn[p];
      case OpKind::Imm: return o.idx;
      case OpKind::Lm0: return lm_peek(m, ptr[0], o.idx);
      case OpKind::Lm1: return lm_peek(m, ptr[1], o.idx);
      case OpKind::Lm0Inc: case OpKind::Lm0Dec: case OpKind::Lm1Inc: case OpKind::Lm1Dec: {
        const int which = (o.kind == OpKind::Lm1Inc || o.kind == OpKind::Lm1Dec) ? 1 : 0;
        const uint32_t v = lm_peek(m, ptr[which], 0);
        ptr[which] += (o.kind == OpKind::Lm0Inc || o.kind == OpKind::Lm1Inc) ? 4 : -4;
        return v;
      }
      case OpKind::NnRing: {
        if (m.nn_put == nn_get) return 0;
        const uint32_t v = m.nn[nn_get];
        nn_get = static_cast<uint32_t>((nn_get + 1) % m.nn.size());
        return v;
      }
      default: return 0;
    }
  }
};

}  // namespace

void Chip::lockstep_before(const ME& m, int ci, uint32_t pc) {
  LockstepRecord& r = debug_.lockstep_next;
  r = LockstepRecord{};
  r.kind = kLockstepRetire;
  r.ctx = ci;
  r.pc = pc;
  r.nn_put = m.nn_put;
  const ME& next = mes_[(m.index + 1) % mes_.size()];
  r.next_put = next.nn_put;
  r.next_get = next.nn_get;
  for (size_t k = 0; k < rings_.size() && k < 32; ++k) {
    if (scratch_ring_full(static_cast<int>(k))) r.ring_full |= 1u << k;
    if (scratch_ring_empty(static_cast<int>(k))) r.ring_empty |= 1u << k;
  }
  if (pc >= m.code.size()) return;
  const Insn& in = m.code[pc];
  const uint16_t op = in.handler == H_TRACE_POINT ? trace_original(m.index, pc) : in.handler;
  const bool nn_signal =  // any local_csr_wr: its value
      (op == isa::OP_LOCAL_CSR && in.flag) || op == H_SAME_ME_SIGNAL;
  if (!is_command(op) && !nn_signal) return;
  const Context& c = m.ctx[ci];
  Peek peek{*this, m, ci, {lm_pointer(c, 0), lm_pointer(c, 1)}, m.nn_get};
  r.a = peek.read(in.a);
  r.b = peek.read(in.b);
}

void Chip::lockstep_after(ME& m, int ci, uint32_t pc) {
  if (m.index == debug_.corrupt_me && pc == debug_.corrupt_pc && pc < m.code.size()) {
    const Opnd d = m.code[pc].dest;
    if (d.kind == OpKind::GprA) m.gpr_a()[phys(m, ci, d.idx)] ^= 1u;
    if (d.kind == OpKind::GprB) m.gpr_b()[phys(m, ci, d.idx)] ^= 1u;
  }
  LockstepRecord r = debug_.lockstep_next;
  r.time = m.time - 1;  // run_me counted the instruction's cycle (not yet any penalty)
  debug_.lockstep_log.push_back(r);
}

void Chip::lockstep_delivered(const Event& ev, const ME& m) {
  LockstepRecord r;
  r.kind = kLockstepDelivery;
  r.time = std::max(ev.time, m.time);  // an ME ahead of the event sees it from its own time
  r.ctx = ev.ctx;
  r.pc = ev.sig > 0 ? static_cast<uint32_t>(ev.sig) : 0;
  r.counts = ev.counts ? 1 : 0;
  debug_.lockstep_log.push_back(r);
}

// gpr_a, gpr_b, $ in, $ out, $$ in, $$ out (128 words each), local memory, NN (128), the
// next ME's NN (128), then per context (8): pc, condition codes (Z N C V as bits 3..0),
// then the outstanding commands.
std::vector<uint32_t> Chip::lockstep_state(int me_index) {
  const ME& m = me(me_index);
  const ME& next = mes_[(m.index + 1) % mes_.size()];
  std::vector<uint32_t> out;
  out.reserve(6 * 128 + m.lm.size + 2 * 128 + 17);
  for (const auto f : {m.gpr_a(), m.gpr_b(), m.sram_in(), m.sram_out(), m.dram_in(), m.dram_out()}) {
    out.insert(out.end(), f.begin(), f.end());
    out.resize(out.size() + (f.size() < 128 ? 128 - f.size() : 0), 0);
  }
  for (size_t i = 0; i < m.lm.size; ++i) out.push_back(m.lm[i]);
  for (const auto* f : {&m.nn, &next.nn}) {
    out.insert(out.end(), f->begin(), f->end());
    out.resize(out.size() + (f->size() < 128 ? 128 - f->size() : 0), 0);
  }
  for (int ci = 0; ci < 8; ++ci) {
    const Context& c = m.ctx[ci];
    out.push_back(c.pc);
    out.push_back((c.z ? 8u : 0u) | (c.n ? 4u : 0u) | (c.c ? 2u : 0u) | (c.v ? 1u : 0u));
  }
  out.push_back(static_cast<uint32_t>(m.outstanding));
  return out;
}

}  // namespace npkit
