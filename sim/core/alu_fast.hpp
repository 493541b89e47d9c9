// The ALU's arithmetic (shared by exec_alu in alu.cpp) and the specialised alu/alu_shf
// handlers predecode picks for plain operands (chip.hpp, H_ALU_FAST): one instantiation per
// (operation, A kind, B kind), so the operation, the operand kinds and the shift type are
// decided at load, not per instruction.  A header because chip.cpp builds the dispatch table
// from the instantiations.
#pragma once
#include <bit>
#include <utility>

#include "operands.hpp"

namespace npkit::alu {

using namespace isa;

inline uint32_t shifter(uint32_t v, uint8_t type, uint8_t amount) {
  if (amount == 0) return v;
  switch (type) {
    case shift_types::SHL: return v << amount;
    case shift_types::SHR: return v >> amount;
    case shift_types::SHL_ROT: return std::rotl(v, amount);
    default: return std::rotr(v, amount);
  }
}

// The condition codes an ALU result sets, written together.
struct Result {
  uint32_t r;
  bool c, v;
};

// r = a + b + carry_in, with C (carry out) and V (signed overflow)
inline Result add(uint32_t a, uint32_t b, uint32_t carry_in) {
  const uint64_t wide = static_cast<uint64_t>(a) + b + carry_in;
  const uint32_t r = static_cast<uint32_t>(wide);
  return {r, (wide >> 32) != 0, ((~(a ^ b) & (a ^ r)) >> 31) != 0};
}
// the same without a carry in: the host's carry and overflow flags
inline Result add(uint32_t a, uint32_t b) {
  uint32_t r;
  int32_t s;
  const bool c = __builtin_add_overflow(a, b, &r);
  const bool v = __builtin_add_overflow(static_cast<int32_t>(a), static_cast<int32_t>(b), &s);
  return {r, c, v};
}

// r = a - b - borrow_in, with C = no borrow (ARM convention: bhi = C && !Z) and V
inline Result sub(uint32_t a, uint32_t b, uint32_t borrow_in) {
  const uint32_t r = a - b - borrow_in;
  return {r, static_cast<uint64_t>(a) >= static_cast<uint64_t>(b) + borrow_in,
          (((a ^ b) & (a ^ r)) >> 31) != 0};
}
// the same without a borrow in: C = no unsigned borrow, V = signed overflow
inline Result sub(uint32_t a, uint32_t b) {
  uint32_t r;
  int32_t s;
  const bool borrow = __builtin_sub_overflow(a, b, &r);
  const bool v = __builtin_sub_overflow(static_cast<int32_t>(a), static_cast<int32_t>(b), &s);
  return {r, !borrow, v};
}

// ALU operation `op` on a and b (b already through the shifter); c is read for the carry
// operations.
[[gnu::always_inline]] inline Result compute(uint32_t op, const Context& c, uint32_t a, uint32_t b) {
  switch (op) {
    case alu_ops::B: return {b, false, false};
    case alu_ops::NOT_B: return {~b, false, false};
    case alu_ops::AND: return {a & b, false, false};
    case alu_ops::NOT_AND: return {~a & b, false, false};
    case alu_ops::AND_NOT: return {a & ~b, false, false};
    case alu_ops::OR: return {a | b, false, false};
    case alu_ops::XOR: return {a ^ b, false, false};
    case alu_ops::PLUS: return add(a, b);
    case alu_ops::MINUS: return sub(a, b);
    case alu_ops::B_MINUS_A: return sub(b, a);
    case alu_ops::PLUS_CARRY: return add(a, b, c.c ? 1 : 0);
    case alu_ops::MINUS_CARRY: return sub(a, b, c.c ? 0 : 1);
    case alu_ops::PLUS_8: return add(a, b & 0xFF);
    case alu_ops::PLUS_16: return add(a, b & 0xFFFF);
    default: return add(a, b & 0xF);  // PLUS_4
  }
}

// Z, N, C, V and the result dbl_shf's indirect amount reads.
[[gnu::always_inline]] inline uint32_t retire(Context& c, Result x) {
  c.z = x.r == 0;
  c.n = (x.r >> 31) != 0;
  c.c = x.c;
  c.v = x.v;
  c.last_alu = x.r;
  return x.r;
}

// B through the shifter of kind BKind (kAluBRegNoShift, or shift type + 1).
template <int BKind>
[[gnu::always_inline]] inline uint32_t shift_b(uint32_t v, uint8_t amount) {
  if constexpr (BKind == kAluBRegNoShift) return v;
  else if constexpr (BKind == 1 + shift_types::SHL) return v << amount;
  else if constexpr (BKind == 1 + shift_types::SHR) return v >> amount;
  else if constexpr (BKind == 1 + shift_types::SHL_ROT) return std::rotl(v, amount);
  else return std::rotr(v, amount);
}

// alu/alu_shf with plain operands: A an immediate (or --, as 0) in a.idx when AImm, else a
// register at reg_a; B the immediate already shifted in imm (kAluBImm) or a register at
// reg_b; the result to reg_d (the sink for --).  Registers are context-relative indexes
// into ME::regs.
template <uint32_t Op, bool AImm, int BKind>
Outcome exec_alu_fast(Chip&, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t* const r = m.regs.data() + static_cast<size_t>(ci * m.per_ctx);
  const uint32_t a = AImm ? in.a.idx : r[in.reg_a];
  const uint32_t b = BKind == kAluBImm ? in.imm : shift_b<BKind>(r[in.reg_b], in.shamt);
  r[in.reg_d] = retire(c, compute(Op, c, a, b));
  return Outcome::Next;
}

// alu/alu_shf with local-memory operands (*l$index0[k], *l$index1[k]) besides plain ones:
// the operand classes packed in aux (kAluClass*, 2 bits each: A, B, destination), the
// operation decided at load, B through the shifter at run time.
[[gnu::always_inline]] inline uint32_t& lm_operand(Chip& chip, ME& m, Context& c, unsigned cls,
                                                   uint8_t k) {
  return detail::lm_word(m, chip.lm_addr(c, cls == kAluClassLm1 ? 1 : 0), k);
}
template <uint32_t Op>
Outcome exec_alu_lm(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t* const r = m.regs.data() + static_cast<size_t>(ci * m.per_ctx);
  const auto source = [&](unsigned cls, uint16_t reg, uint8_t idx) -> uint32_t {
    if (cls == kAluClassReg) return r[reg];
    if (cls == kAluClassImm) return idx;
    return lm_operand(chip, m, c, cls, idx);
  };
  const uint32_t a = source(in.aux & 3, in.reg_a, in.a.idx);
  const uint32_t b = shifter(source((in.aux >> 2) & 3, in.reg_b, in.b.idx), in.shift, in.shamt);
  const uint32_t v = retire(c, compute(Op, c, a, b));
  const unsigned d = (in.aux >> 4) & 3;
  if (d == kAluClassReg) r[in.reg_d] = v;
  else lm_operand(chip, m, c, d, in.dest.idx) = v;
  return Outcome::Next;
}

// The table of the instantiations, indexed by alu_fast_index(...) - H_ALU_FAST.
template <size_t... K>
constexpr std::array<Handler, sizeof...(K)> fast_table(std::index_sequence<K...>) {
  return {&exec_alu_fast<static_cast<uint32_t>(K / (2 * kAluBKinds)), (K / kAluBKinds) % 2 == 1,
                         static_cast<int>(K % kAluBKinds)>...};
}
inline constexpr auto kFastHandlers = fast_table(std::make_index_sequence<kAluFastCount>{});
template <size_t... K>
constexpr std::array<Handler, sizeof...(K)> lm_table(std::index_sequence<K...>) {
  return {&exec_alu_lm<static_cast<uint32_t>(K)>...};
}
inline constexpr auto kLmHandlers = lm_table(std::make_index_sequence<alu_ops::COUNT>{});

}  // namespace npkit::alu
