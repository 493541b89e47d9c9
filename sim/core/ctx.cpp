// Context arbitration and local CSRs.
#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;

uint32_t next_random(ME& m) {  // xorshift64*, seeded per ME from the chip seed
  uint64_t x = m.prng ? m.prng : 0x2545F4914F6CDD1DULL;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  m.prng = x;
  return static_cast<uint32_t>((x * 0x2545F4914F6CDD1DULL) >> 32);
}

uint32_t csr_read(Chip& chip, ME& m, Context& c, int ci, uint8_t csr) {
  switch (csr) {
    case local_csrs::CTX_ENABLES: {
      uint32_t v = m.contexts == 4 ? 1u << 31 : 0;
      for (int i = 0; i < 8; ++i)
        if (m.ctx[i].enabled) v |= 1u << (8 + i);
      return v;
    }
    case local_csrs::ACTIVE_CTX_STS: return static_cast<uint32_t>(ci) | (static_cast<uint32_t>(m.number & 0x1F) << 3);
    case local_csrs::BYTE_INDEX: return c.byte_index;
    case local_csrs::ACTIVE_LM_ADDR_0: return chip.lm_addr(c, 0);
    case local_csrs::ACTIVE_LM_ADDR_1: return chip.lm_addr(c, 1);
    case local_csrs::TIMESTAMP_LOW: return static_cast<uint32_t>(m.time / 16);
    case local_csrs::TIMESTAMP_HIGH: return static_cast<uint32_t>((m.time / 16) >> 32);
    case local_csrs::PSEUDO_RANDOM_NUMBER: return next_random(m);
    case local_csrs::CRC_REMAINDER: return c.crc_remainder;
    case local_csrs::NN_PUT: return m.nn_put;
    case local_csrs::NN_GET: return m.nn_get;
    case local_csrs::CTX_ARB_CNTL: return m.ctx_arb_cntl;
    case local_csrs::MAILBOX0: case local_csrs::MAILBOX1: case local_csrs::MAILBOX2: case local_csrs::MAILBOX3:
      return m.mailbox[csr - local_csrs::MAILBOX0];
    default: return 0;  // SAME_ME_SIGNAL, NEXT_NEIGHBOR_SIGNAL read as 0
  }
}

void write_ctx_enables(Chip& chip, ME& m, uint32_t v) {
  for (int i = 0; i < m.contexts; ++i) {
    bool on = (v >> (8 + i)) & 1;
    Context& x = m.ctx[i];
    if (!on && x.enabled && i != m.cur) {
      x.enabled = false;
      chip.set_ctx_state(m, i, CtxState::Inactive);
    } else if (on && !x.enabled) {
      x.enabled = true;
      if (x.state == CtxState::Inactive) chip.set_ctx_state(m, i, CtxState::Ready);
    }
  }
}

void csr_write(Chip& chip, ME& m, Context& c, uint8_t csr, uint32_t v) {
  switch (csr) {
    case local_csrs::CTX_ENABLES: write_ctx_enables(chip, m, v); break;
    case local_csrs::SAME_ME_SIGNAL:
      chip.raise_signal(m.index, v & 7, (v >> 3) & 0xF, m.time + 1);
      break;
    case local_csrs::NEXT_NEIGHBOR_SIGNAL:
      chip.raise_signal(chip.next_me(m).index, v & 7, (v >> 3) & 0xF, m.time + 1);
      break;
    case local_csrs::BYTE_INDEX: c.byte_index = v & 3; break;
    case local_csrs::ACTIVE_LM_ADDR_0: case local_csrs::ACTIVE_LM_ADDR_1: {
      int which = csr == local_csrs::ACTIVE_LM_ADDR_1 ? 1 : 0;
      chip.lm_addr(c, which);  // settle an earlier pending write first
      c.lm_pending[which] = v;
      c.lm_apply_at[which] = c.instructions + 1 + chip.config().lm_addr_delay;
      break;
    }
    case local_csrs::PSEUDO_RANDOM_NUMBER: m.prng = v; break;
    case local_csrs::CRC_REMAINDER: c.crc_remainder = v; break;
    case local_csrs::NN_PUT: m.nn_put = static_cast<uint32_t>(v % m.nn.size()); break;
    case local_csrs::NN_GET: m.nn_get = static_cast<uint32_t>(v % m.nn.size()); break;
    case local_csrs::CTX_ARB_CNTL: m.ctx_arb_cntl = v; break;
    case local_csrs::MAILBOX0: case local_csrs::MAILBOX1: case local_csrs::MAILBOX2: case local_csrs::MAILBOX3:
      m.mailbox[csr - local_csrs::MAILBOX0] = v;
      break;
    default: break;  // read-only CSRs (ACTIVE_CTX_STS, TIMESTAMP_*) ignore writes
  }
}

}  // namespace

// ctx_arb[sigs], all|any / voluntary / kill: the swap happens in the dispatch loop (after
// any defer slots).
Outcome exec_ctx_arb(Chip&, ME&, Context& c, int, const Insn& in) {
  c.wait_mask = static_cast<uint16_t>(in.imm);
  c.swap_mode = in.sub;
  return Outcome::Swap;
}

// local_csr_rd: the value is ORed into the next immed; local_csr_wr: write the CSR.
Outcome exec_local_csr(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (in.flag) {
    csr_write(chip, m, c, in.aux, chip.read(m, c, ci, in.b));
  } else {
    c.csr_value = csr_read(chip, m, c, ci, in.aux);
    c.csr_pending = true;
  }
  return Outcome::Next;
}

// local_csr_wr[SAME_ME_SIGNAL, b], b a GPR or an immediate (decode.cpp): the CSR switch's
// SAME_ME_SIGNAL case.
Outcome exec_same_me_signal(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  chip.same_me_signal(m, chip.read(m, c, ci, in.b));
  return Outcome::Next;
}

}  // namespace npkit
