// ALU-class instructions: alu/alu_shf, dbl_shf, immed family, ld_field, byte_align, ffs,
// pop_count.  One small function per instruction; the shared shifter and flag helpers first.
#include <bit>

#include "alu_fast.hpp"
#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;
using alu::shifter;

void set_zn(Context& c, uint32_t r) {
  c.z = r == 0;
  c.n = (r >> 31) != 0;
}

}  // namespace

// The general form (operands of any kind); plain ones take alu::exec_alu_fast instead.
Outcome exec_alu(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t a = chip.read(m, c, ci, in.a);
  uint32_t b = shifter(chip.read(m, c, ci, in.b), in.shift, in.shamt);
  chip.write(m, c, ci, in.dest, alu::retire(c, alu::compute(in.sub, c, a, b)));
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
