// ALU-class instructions: alu/alu_shf, dbl_shf, immed family, ld_field, byte_align, ffs,
// pop_count.  One small function per instruction; the shared shifter and flag helpers first.
#include <bit>

#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;

uint32_t shifter(uint32_t v, uint8_t type, uint8_t amount) {
  if (amount == 0) return v;
  switch (type) {
    case shift_types::SHL: return v << amount;
    case shift_types::SHR: return v >> amount;
    case shift_types::SHL_ROT: return std::rotl(v, amount);
    default: return std::rotr(v, amount);
  }
}

void set_zn(Context& c, uint32_t r) {
  c.z = r == 0;
  c.n = (r >> 31) != 0;
}

// r = a + b + carry_in, with C (carry out) and V (signed overflow)
uint32_t add(Context& c, uint32_t a, uint32_t b, uint32_t carry_in) {
  uint64_t wide = static_cast<uint64_t>(a) + b + carry_in;
  uint32_t r = static_cast<uint32_t>(wide);
  c.c = (wide >> 32) != 0;
  c.v = ((~(a ^ b) & (a ^ r)) >> 31) != 0;
  return r;
}

// r = a - b - borrow_in, with C = no borrow (ARM convention: bhi = C && !Z) and V
uint32_t sub(Context& c, uint32_t a, uint32_t b, uint32_t borrow_in) {
  uint32_t r = a - b - borrow_in;
  c.c = static_cast<uint64_t>(a) >= static_cast<uint64_t>(b) + borrow_in;
  c.v = (((a ^ b) & (a ^ r)) >> 31) != 0;
  return r;
}

uint32_t logical(Context& c, uint32_t r) {
  c.c = false;
  c.v = false;
  return r;
}

// The ALU proper, shared by exec_alu and exec_alu_plain.
inline uint32_t alu_op(Context& c, uint32_t a, uint32_t b, const Insn& in) {
  uint32_t r;
  switch (in.sub) {
    case alu_ops::B: r = logical(c, b); break;
    case alu_ops::NOT_B: r = logical(c, ~b); break;
    case alu_ops::AND: r = logical(c, a & b); break;
    case alu_ops::NOT_AND: r = logical(c, ~a & b); break;
    case alu_ops::AND_NOT: r = logical(c, a & ~b); break;
    case alu_ops::OR: r = logical(c, a | b); break;
    case alu_ops::XOR: r = logical(c, a ^ b); break;
    case alu_ops::PLUS: r = add(c, a, b, 0); break;
    case alu_ops::MINUS: r = sub(c, a, b, 0); break;
    case alu_ops::B_MINUS_A: r = sub(c, b, a, 0); break;
    case alu_ops::PLUS_CARRY: r = add(c, a, b, c.c ? 1 : 0); break;
    case alu_ops::MINUS_CARRY: r = sub(c, a, b, c.c ? 0 : 1); break;
    case alu_ops::PLUS_8: r = add(c, a, b & 0xFF, 0); break;
    case alu_ops::PLUS_16: r = add(c, a, b & 0xFFFF, 0); break;
    default: r = add(c, a, b & 0xF, 0); break;  // PLUS_4
  }
  set_zn(c, r);
  c.last_alu = r;
  return r;
}

// A plain operand (plain_source/plain_dest in chip.hpp): a register-file word, an
// immediate or none -- what Chip::read/write do for these kinds, with no call and no fault.
inline uint32_t plain_read(const ME& m, int ci, Opnd o) {
  const size_t p = Chip::phys(m, ci, o.idx);
  switch (o.kind) {
    case OpKind::GprA: return m.gpr_a[p];
    case OpKind::GprB: return m.gpr_b[p];
    case OpKind::XferS: return m.sram_in[p];
    case OpKind::XferD: return m.dram_in[p];
    case OpKind::Imm: return o.idx;
    default: return 0;  // None
  }
}

inline void plain_write(ME& m, int ci, Opnd o, uint32_t v) {
  const size_t p = Chip::phys(m, ci, o.idx);
  switch (o.kind) {
    case OpKind::GprA: m.gpr_a[p] = v; break;
    case OpKind::GprB: m.gpr_b[p] = v; break;
    case OpKind::XferS: m.sram_out[p] = v; break;
    case OpKind::XferD: m.dram_out[p] = v; break;
    default: break;  // None
  }
}

}  // namespace

Outcome exec_alu(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t a = chip.read(m, c, ci, in.a);
  uint32_t b = shifter(chip.read(m, c, ci, in.b), in.shift, in.shamt);
  chip.write(m, c, ci, in.dest, alu_op(c, a, b, in));
  return Outcome::Next;
}

Outcome exec_alu_plain(Chip&, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t a = plain_read(m, ci, in.a);
  uint32_t b = shifter(plain_read(m, ci, in.b), in.shift, in.shamt);
  plain_write(m, ci, in.dest, alu_op(c, a, b, in));
  return Outcome::Next;
}

// dest = low 32 bits of (a:b) >> n; n from the previous ALU result when indirect.
Outcome exec_dbl_shf(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint64_t ab = (static_cast<uint64_t>(chip.read(m, c, ci, in.a)) << 32) | chip.read(m, c, ci, in.b);
  unsigned n = in.flag ? (c.last_alu & 31) : in.shamt;
  chip.write(m, c, ci, in.dest, static_cast<uint32_t>(ab >> n));
  return Outcome::Next;
}

// immed: ~?(value << 8*shift); _w0/_w1 replace a 16-bit half, _b0.._b3 a byte (value
// inverted first when the invert flag is set); load_addr loads the value.  A pending
// local_csr_rd value is ORed into the result.
Outcome exec_immed(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t v = in.flag ? ~in.imm : in.imm;
  uint32_t r;
  auto merge = [&](uint32_t mask, unsigned pos) {
    uint32_t old = chip.read_dest(m, c, ci, in.dest);
    return (old & ~(mask << pos)) | ((v & mask) << pos);
  };
  switch (in.sub) {
    case immed_variants::IMMED: {
      uint32_t shifted = in.imm << (8 * in.shift);
      r = in.flag ? ~shifted : shifted;
      break;
    }
    case immed_variants::IMMED_W0: r = merge(0xFFFF, 0); break;
    case immed_variants::IMMED_W1: r = merge(0xFFFF, 16); break;
    case immed_variants::IMMED_B0: r = merge(0xFF, 0); break;
    case immed_variants::IMMED_B1: r = merge(0xFF, 8); break;
    case immed_variants::IMMED_B2: r = merge(0xFF, 16); break;
    case immed_variants::IMMED_B3: r = merge(0xFF, 24); break;
    default: r = in.imm; break;  // load_addr
  }
  if (c.csr_pending) {
    r |= c.csr_value;
    c.csr_pending = false;
  }
  chip.write(m, c, ci, in.dest, r);
  return Outcome::Next;
}

// Replace the bytes of dest selected by mask with the shifted src (_w_clr: clear the others).
Outcome exec_ld_field(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t src = shifter(chip.read(m, c, ci, in.b), in.shift, in.shamt);
  uint32_t bytes = 0;
  for (int i = 0; i < 4; ++i)
    if (in.aux & (1 << i)) bytes |= 0xFFu << (8 * i);
  uint32_t old = in.flag ? 0 : chip.read_dest(m, c, ci, in.dest);
  uint32_t r = (old & ~bytes) | (src & bytes);
  if (in.flag2) {  // load_cc
    set_zn(c, r);
    c.c = c.v = false;
  }
  chip.write(m, c, ci, in.dest, r);
  return Outcome::Next;
}

// 4 bytes of the 8-byte string a:b starting at BYTE_INDEX (big endian: a holds bytes 0..3
// with byte 0 in bits 31..24; little endian: a holds bytes 0..3 with byte 0 in bits 7..0).
Outcome exec_byte_align(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint64_t a = chip.read(m, c, ci, in.a), b = chip.read(m, c, ci, in.b);
  unsigned i = c.byte_index & 3;
  uint32_t r = in.flag ? static_cast<uint32_t>(((b << 32) | a) >> (8 * i))
                       : static_cast<uint32_t>((((a << 32) | b) << (8 * i)) >> 32);
  chip.write(m, c, ci, in.dest, r);
  return Outcome::Next;
}

// ffs: index of the least significant set bit (0 and Z set when src is 0); pop_count.
Outcome exec_bitop(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t src = chip.read(m, c, ci, in.b);
  uint32_t r;
  if (in.sub == bitops::FFS) {
    r = src ? static_cast<uint32_t>(std::countr_zero(src)) : 0;
    c.z = src == 0;
  } else {
    r = static_cast<uint32_t>(std::popcount(src));
  }
  chip.write(m, c, ci, in.dest, r);
  return Outcome::Next;
}

}  // namespace npkit
