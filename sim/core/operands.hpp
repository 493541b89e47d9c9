// Operand access for the instruction semantics: inline, because every instruction reads
// and writes through here.
#pragma once
#include "chip.hpp"

namespace npkit {

inline uint32_t Chip::lm_addr(Context& c, int which) {
  if (c.lm_apply_at[which] <= c.instructions) {
    c.lm_addr[which] = c.lm_pending[which];
    c.lm_apply_at[which] = UINT64_MAX;
  }
  return c.lm_addr[which];
}

namespace detail {
inline uint32_t& lm_word(ME& m, uint32_t byte_addr, uint32_t k) {
  uint32_t w = (byte_addr >> 2) + k;
  if (w >= m.lm.size)
    fault("bad_address", "local memory address " + std::to_string(byte_addr + 4 * k) +
          " is beyond local memory (" + std::to_string(m.lm.size * 4) + " bytes)");
  return m.lm[w];
}
}  // namespace detail

// GPRs and immediates inline (the common case); the rest out of line in read_slow.
inline uint32_t Chip::read(ME& m, Context& c, int ci, Opnd o) {
  if (o.kind == OpKind::GprA) [[likely]] return m.gpr_a()[phys(m, ci, o.idx)];
  if (o.kind == OpKind::GprB) [[likely]] return m.gpr_b()[phys(m, ci, o.idx)];
  if (o.kind == OpKind::Imm) return o.idx;
  if (o.kind == OpKind::XferS) return m.sram_in()[phys(m, ci, o.idx)];  // packet/status words
  return read_slow(m, c, ci, o);
}

inline void Chip::write(ME& m, Context& c, int ci, Opnd o, uint32_t v) {
  if (o.kind == OpKind::GprA) [[likely]] { m.gpr_a()[phys(m, ci, o.idx)] = v; return; }
  if (o.kind == OpKind::GprB) [[likely]] { m.gpr_b()[phys(m, ci, o.idx)] = v; return; }
  write_slow(m, c, ci, o, v);
}

// The current value of a destination, for instructions that merge into it (immed_w*/b*,
// ld_field): the register that a write goes to ($x: the out register, n$: the next ME's),
// read without post-modifying *l$index++/--.
inline uint32_t Chip::read_dest(ME& m, Context& c, int ci, Opnd o) {
  switch (o.kind) {
    case OpKind::XferS: return m.sram_out()[phys(m, ci, o.idx)];
    case OpKind::XferD: return m.dram_out()[phys(m, ci, o.idx)];
    case OpKind::Nn: {
      const size_t p = phys(m, ci, o.idx);
      if (deferring()) [[unlikely]] {  // this ME's own write of the quantum, if any
        for (auto w = q_nn_log_.rbegin(); w != q_nn_log_.rend(); ++w)
          if (!w->ring && w->idx == p) return w->value;
      }
      return next_me(m).nn[p];
    }
    case OpKind::Lm0Inc: case OpKind::Lm0Dec: return detail::lm_word(m, lm_addr(c, 0), 0);
    case OpKind::Lm1Inc: case OpKind::Lm1Dec: return detail::lm_word(m, lm_addr(c, 1), 0);
    case OpKind::NnRing: return 0;
    default: return read(m, c, ci, o);
  }
}

#ifdef NPKIT_OPERANDS_SLOW_PATH  // defined by exactly one file (chip.cpp)
uint32_t Chip::read_slow(ME& m, Context& c, int ci, Opnd o) {
  switch (o.kind) {
    case OpKind::GprA: return m.gpr_a()[phys(m, ci, o.idx)];
    case OpKind::GprB: return m.gpr_b()[phys(m, ci, o.idx)];
    case OpKind::XferS: return m.sram_in()[phys(m, ci, o.idx)];
    case OpKind::XferD: return m.dram_in()[phys(m, ci, o.idx)];
    case OpKind::Nn: return m.nn[phys(m, ci, o.idx)];
    case OpKind::Imm: return o.idx;
    case OpKind::None: return 0;
    case OpKind::Lm0: return detail::lm_word(m, lm_addr(c, 0), o.idx);
    case OpKind::Lm1: return detail::lm_word(m, lm_addr(c, 1), o.idx);
    case OpKind::Lm0Inc: case OpKind::Lm0Dec: case OpKind::Lm1Inc: case OpKind::Lm1Dec: {
      int which = (o.kind == OpKind::Lm1Inc || o.kind == OpKind::Lm1Dec) ? 1 : 0;
      uint32_t addr = lm_addr(c, which);
      uint32_t v = detail::lm_word(m, addr, 0);
      bool inc = o.kind == OpKind::Lm0Inc || o.kind == OpKind::Lm1Inc;
      c.lm_addr[which] = inc ? addr + 4 : addr - 4;
      return v;
    }
    case OpKind::NnRing: {
      if (nn_empty(m)) return 0;  // software checks NN_EMPTY first (br_inp_state)
      uint32_t v = m.nn[m.nn_get];
      m.nn_get = static_cast<uint32_t>((m.nn_get + 1) % m.nn.size());
      return v;
    }
  }
  return 0;
}

void Chip::write_slow(ME& m, Context& c, int ci, Opnd o, uint32_t v) {
  switch (o.kind) {
    case OpKind::GprA: m.gpr_a()[phys(m, ci, o.idx)] = v; return;
    case OpKind::GprB: m.gpr_b()[phys(m, ci, o.idx)] = v; return;
    case OpKind::XferS: m.sram_out()[phys(m, ci, o.idx)] = v; return;
    case OpKind::XferD: m.dram_out()[phys(m, ci, o.idx)] = v; return;
    case OpKind::Nn:
      if (deferring()) [[unlikely]] {  // the neighbour sees it at the quantum's end
        q_nn_log_.push_back(NnWrite{static_cast<uint32_t>(phys(m, ci, o.idx)), v, false});
        return;
      }
      next_me(m).nn[phys(m, ci, o.idx)] = v;
      return;
    case OpKind::Imm: case OpKind::None: return;
    case OpKind::Lm0: detail::lm_word(m, lm_addr(c, 0), o.idx) = v; return;
    case OpKind::Lm1: detail::lm_word(m, lm_addr(c, 1), o.idx) = v; return;
    case OpKind::Lm0Inc: case OpKind::Lm0Dec: case OpKind::Lm1Inc: case OpKind::Lm1Dec: {
      int which = (o.kind == OpKind::Lm1Inc || o.kind == OpKind::Lm1Dec) ? 1 : 0;
      uint32_t addr = lm_addr(c, which);
      detail::lm_word(m, addr, 0) = v;
      bool inc = o.kind == OpKind::Lm0Inc || o.kind == OpKind::Lm1Inc;
      c.lm_addr[which] = inc ? addr + 4 : addr - 4;
      return;
    }
    case OpKind::NnRing: {
      ME& nx = next_me(m);
      if (nn_full_for(m)) fault("ring_overflow", "next-neighbour ring of ME " + std::to_string(nx.index) + " is full");
      if (deferring()) [[unlikely]] {
        q_nn_log_.push_back(NnWrite{0, v, true});
        q_nn_puts_++;
        return;
      }
      nx.nn[nx.nn_put] = v;
      nx.nn_put = static_cast<uint32_t>((nx.nn_put + 1) % nx.nn.size());
      return;
    }
  }
}
#endif

}  // namespace npkit
