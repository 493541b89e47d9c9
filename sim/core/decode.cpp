// Predecoding: each 40-bit word is decoded once at load into an Insn (operand kinds resolved,
// handler index chosen, static checks done), so the dispatch loop never looks at bits.
#include <string>

#include "alu_fast.hpp"

namespace npkit {
namespace {

using namespace isa;

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#012llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Decoder {
  uint64_t word;
  int per_ctx;
  const ChipConfig& cfg;

  [[noreturn]] void illegal(const std::string& why) const {
    fault("illegal_instruction", why + " in word " + hex(word));
  }

  uint32_t f(Field fld) const { return get(word, fld); }

  // An operand code -> (kind, index); relative indexes beyond the context's file are illegal.
  Opnd operand(Field fld, bool for_write) const {
    uint32_t code = f(fld);
    auto in = [&](uint32_t first, uint32_t count) { return code >= first && code < first + count; };
    auto rel = [&](OpKind k, uint32_t first, int limit, const char* what) {
      uint32_t i = code - first;
      if (static_cast<int>(i) >= limit)
        illegal(std::string(what) + " register " + std::to_string(i) + " is beyond the " +
                std::to_string(limit) + " each context owns (register out of range)");
      return Opnd{k, static_cast<uint8_t>(i)};
    };
    if (in(OPND_GPR_A_FIRST, OPND_GPR_A_COUNT)) return rel(OpKind::GprA, OPND_GPR_A_FIRST, per_ctx, "GPR A");
    if (in(OPND_GPR_B_FIRST, OPND_GPR_B_COUNT)) return rel(OpKind::GprB, OPND_GPR_B_FIRST, per_ctx, "GPR B");
    if (in(OPND_XFER_S_FIRST, OPND_XFER_S_COUNT)) return rel(OpKind::XferS, OPND_XFER_S_FIRST, per_ctx, "$ transfer");
    if (in(OPND_XFER_D_FIRST, OPND_XFER_D_COUNT)) return rel(OpKind::XferD, OPND_XFER_D_FIRST, per_ctx, "$$ transfer");
    if (in(OPND_NN_FIRST, OPND_NN_COUNT)) return rel(OpKind::Nn, OPND_NN_FIRST, per_ctx, "n$");
    if (in(OPND_LM0_FIRST, OPND_LM0_COUNT)) return Opnd{OpKind::Lm0, static_cast<uint8_t>(code - OPND_LM0_FIRST)};
    if (in(OPND_LM1_FIRST, OPND_LM1_COUNT)) return Opnd{OpKind::Lm1, static_cast<uint8_t>(code - OPND_LM1_FIRST)};
    if (code == OPND_LM0_INC_FIRST) return Opnd{OpKind::Lm0Inc, 0};
    if (code == OPND_LM0_DEC_FIRST) return Opnd{OpKind::Lm0Dec, 0};
    if (code == OPND_LM1_INC_FIRST) return Opnd{OpKind::Lm1Inc, 0};
    if (code == OPND_LM1_DEC_FIRST) return Opnd{OpKind::Lm1Dec, 0};
    if (code == OPND_NN_RING_FIRST) return Opnd{OpKind::NnRing, 0};
    if (code == OPND_NONE_FIRST) return Opnd{OpKind::None, 0};
    if (in(OPND_IMM_FIRST, OPND_IMM_COUNT)) {
      if (for_write) illegal("an immediate operand cannot be a destination");
      return Opnd{OpKind::Imm, static_cast<uint8_t>(code - OPND_IMM_FIRST)};
    }
    illegal("reserved operand code " + std::to_string(code));
  }
  Opnd src(Field fld) const { return operand(fld, false); }
  Opnd dst(Field fld) const { return operand(fld, true); }

  uint16_t target(Field fld) const {
    uint32_t t = f(fld);
    if (t >= cfg.control_store_words)
      fault("control_store_overflow", "branch target " + std::to_string(t) +
            " is beyond the control store (" + std::to_string(cfg.control_store_words) + " words)");
    return static_cast<uint16_t>(t);
  }

  uint8_t enum_value(Field fld, uint32_t count, const char* const* names, const char* what) const {
    uint32_t v = f(fld);
    if (v >= count || names[v] == nullptr) illegal(std::string("reserved ") + what + " " + std::to_string(v));
    return static_cast<uint8_t>(v);
  }

  // A transfer-register field: XFER_NONE bit set = none, else the first register; the
  // whole run of `n` registers must lie in the context's file.
  uint8_t xfer(Field fld, int n, bool needed) const {
    uint32_t x = f(fld);
    if (x & XFER_NONE) {
      if (x != XFER_NONE) illegal("reserved transfer-register field " + std::to_string(x));
      if (needed) fault("bad_command", "this command needs transfer registers, got --");
      return 0xFF;
    }
    if (static_cast<int>(x) + n > per_ctx)
      illegal("transfer registers " + std::to_string(x) + ".." + std::to_string(x + n - 1) +
              " are beyond the " + std::to_string(per_ctx) + " each context owns (register out of range)");
    return static_cast<uint8_t>(x);
  }
};

void decode_mem(const Decoder& d, Insn& in, uint32_t opcode) {
  using namespace fmt_mem;
  in.sig = static_cast<uint8_t>(d.f(SIG));
  in.flag = d.f(SWAP) != 0;
  in.count = static_cast<uint8_t>(d.f(COUNT) + 1);
  in.a = d.src(A);
  in.b = d.src(B);
  if (in.flag && in.sig == 0) fault("bad_command", "ctx_swap needs a signal (1..15)");
  uint32_t cmd = d.f(CMD);
  auto count_one = [&] {
    if (in.count != 1) fault("bad_command", "atomic commands take a count of 1, got " + std::to_string(in.count));
  };
  bool reads = false, writes = false;  // uses transfer-in / transfer-out registers
  int words = in.count;
  switch (opcode) {
    case OP_SRAM:
      in.sub = d.enum_value(CMD, sram_cmds::COUNT, sram_cmds::NAMES, "sram command");
      if (cmd == sram_cmds::READ) reads = true;
      else if (cmd == sram_cmds::WRITE) writes = true;
      else if (cmd == sram_cmds::ENQUEUE) { count_one(); writes = true; }
      else if (cmd == sram_cmds::DEQUEUE) { count_one(); reads = true; }
      else if (cmd == sram_cmds::INCR || cmd == sram_cmds::DECR) { count_one(); }
      else if (cmd == sram_cmds::TEST_AND_INCR || cmd == sram_cmds::TEST_AND_DECR) { count_one(); reads = true; }
      else if (cmd >= sram_cmds::TEST_AND_SET || cmd == sram_cmds::SWAP) { count_one(); reads = writes = true; }
      else { count_one(); writes = true; }  // set clr add
      break;
    case OP_SCRATCH:
      in.sub = d.enum_value(CMD, scratch_cmds::COUNT, scratch_cmds::NAMES, "scratch command");
      if (cmd == scratch_cmds::READ || cmd == scratch_cmds::GET) reads = true;
      else if (cmd == scratch_cmds::WRITE || cmd == scratch_cmds::PUT) writes = true;
      else if (cmd == scratch_cmds::INCR || cmd == scratch_cmds::DECR) { count_one(); }
      else if (cmd == scratch_cmds::TEST_AND_INCR || cmd == scratch_cmds::TEST_AND_DECR) { count_one(); reads = true; }
      else if (cmd >= scratch_cmds::TEST_AND_SET || cmd == scratch_cmds::SWAP) { count_one(); reads = writes = true; }
      else { count_one(); writes = true; }
      break;
    case OP_DRAM:
      in.sub = d.enum_value(CMD, dram_cmds::COUNT, dram_cmds::NAMES, "dram command");
      words = 2 * in.count;
      if (cmd == dram_cmds::READ) reads = true;
      else if (cmd == dram_cmds::WRITE) writes = true;
      break;
    default:  // MSF
      in.sub = d.enum_value(CMD, msf_cmds::COUNT, msf_cmds::NAMES, "msf command");
      if (cmd == msf_cmds::READ) reads = true;
      else if (cmd == msf_cmds::WRITE) writes = true;
      break;
  }
  in.xfer = d.xfer(XFER, (reads || writes) ? words : 0, reads || writes);
  if (!(reads || writes) && in.xfer != 0xFF) {
    // commands without data may still name registers; they are simply unused
  }
  in.aux = static_cast<uint8_t>(words);
}

// An alu/alu_shf whose operands are plain or indexed local memory (chip.hpp, H_ALU_FAST,
// H_ALU_LM): its handler by operation and operand kinds, its registers as flat indexes into
// ME::regs, an immediate B of a plain one shifted here.  Others keep the general exec_alu.
void specialise_alu(Insn& in, const ChipConfig& cfg) {
  const auto at = reg_layout(cfg);
  constexpr unsigned kNo = 4;  // not a class the specialised handlers take
  const auto source_class = [](Opnd o) {
    switch (o.kind) {
      case OpKind::GprA: case OpKind::GprB: case OpKind::XferS: case OpKind::XferD: return kAluClassReg;
      case OpKind::Imm: case OpKind::None: return kAluClassImm;  // the value (0 for --) is idx
      case OpKind::Lm0: return kAluClassLm0;
      case OpKind::Lm1: return kAluClassLm1;
      default: return kNo;
    }
  };
  const auto source_reg = [&](Opnd o) -> uint16_t {
    switch (o.kind) {
      case OpKind::GprA: return static_cast<uint16_t>(at[kGprA] + o.idx);
      case OpKind::GprB: return static_cast<uint16_t>(at[kGprB] + o.idx);
      case OpKind::XferS: return static_cast<uint16_t>(at[kSramIn] + o.idx);
      case OpKind::XferD: return static_cast<uint16_t>(at[kDramIn] + o.idx);
      default: return 0;
    }
  };
  unsigned d_class = kNo;
  switch (in.dest.kind) {
    case OpKind::GprA: in.reg_d = static_cast<uint16_t>(at[kGprA] + in.dest.idx); d_class = kAluClassReg; break;
    case OpKind::GprB: in.reg_d = static_cast<uint16_t>(at[kGprB] + in.dest.idx); d_class = kAluClassReg; break;
    case OpKind::XferS: in.reg_d = static_cast<uint16_t>(at[kSramOut] + in.dest.idx); d_class = kAluClassReg; break;
    case OpKind::XferD: in.reg_d = static_cast<uint16_t>(at[kDramOut] + in.dest.idx); d_class = kAluClassReg; break;
    case OpKind::None: in.reg_d = static_cast<uint16_t>(at[kSink]); d_class = kAluClassReg; break;
    case OpKind::Lm0: d_class = kAluClassLm0; break;
    case OpKind::Lm1: d_class = kAluClassLm1; break;
    default: break;
  }
  const unsigned a_class = source_class(in.a), b_class = source_class(in.b);
  if (a_class == kNo || b_class == kNo || d_class == kNo) return;  // exec_alu
  in.reg_a = source_reg(in.a);
  in.reg_b = source_reg(in.b);
  const auto is_lm = [](unsigned cls) { return cls == kAluClassLm0 || cls == kAluClassLm1; };
  if (is_lm(a_class) || is_lm(b_class) || is_lm(d_class)) {
    in.aux = static_cast<uint8_t>(a_class | (b_class << 2) | (d_class << 4));
    in.handler = static_cast<uint16_t>(H_ALU_LM + in.sub);
    return;
  }
  int b_kind = kAluBImm;
  if (b_class == kAluClassReg) b_kind = in.shamt == 0 ? kAluBRegNoShift : 1 + in.shift;
  else in.imm = alu::shifter(in.b.idx, in.shift, in.shamt);
  in.handler = alu_fast_index(in.sub, a_class == kAluClassImm, b_kind);
}

}  // namespace

Insn predecode(uint64_t word, int /*me*/, uint32_t /*pc*/, int per_ctx, const ChipConfig& cfg) {
  Decoder d{word, per_ctx, cfg};
  if (word >> WORD_BITS) d.illegal("word wider than 40 bits");
  uint32_t opcode = static_cast<uint32_t>(word >> PAYLOAD_BITS);
  if (opcode >= OPCODE_COUNT || OPCODE_NAMES[opcode] == nullptr)
    d.illegal("reserved opcode " + std::to_string(opcode));
  Insn in;
  in.handler = static_cast<uint8_t>(opcode);
  uint64_t payload = word & ((1ULL << PAYLOAD_BITS) - 1);
  auto reserved = [&](uint64_t used) {
    if (payload & ~used) d.illegal(std::string("reserved bits set in ") + OPCODE_NAMES[opcode]);
  };
  switch (opcode) {
    case OP_ALU: {
      using namespace fmt_alu;
      reserved(USED_BITS);
      in.sub = d.enum_value(OP, alu_ops::COUNT, alu_ops::NAMES, "ALU op");
      in.dest = d.dst(DEST); in.a = d.src(A); in.b = d.src(B);
      in.shift = static_cast<uint8_t>(d.f(SHIFT)); in.shamt = static_cast<uint8_t>(d.f(SHAMT));
      specialise_alu(in, cfg);
      break;
    }
    case OP_DBL_SHF: {
      using namespace fmt_dbl_shf;
      reserved(USED_BITS);
      in.dest = d.dst(DEST); in.a = d.src(A); in.b = d.src(B);
      in.shamt = static_cast<uint8_t>(d.f(SHAMT)); in.flag = d.f(INDIRECT);
      break;
    }
    case OP_IMMED: {
      using namespace fmt_immed;
      reserved(USED_BITS);
      in.sub = d.enum_value(VARIANT, immed_variants::COUNT, immed_variants::NAMES, "immed variant");
      in.dest = d.dst(DEST); in.imm = d.f(VALUE);
      in.shift = static_cast<uint8_t>(d.f(SHIFT)); in.flag = d.f(INVERT);
      break;
    }
    case OP_LD_FIELD: {
      using namespace fmt_ld_field;
      reserved(USED_BITS);
      in.dest = d.dst(DEST); in.aux = static_cast<uint8_t>(d.f(MASK)); in.b = d.src(SRC);
      in.shift = static_cast<uint8_t>(d.f(SHIFT)); in.shamt = static_cast<uint8_t>(d.f(SHAMT));
      in.flag = d.f(CLR); in.flag2 = d.f(LOAD_CC);
      break;
    }
    case OP_BYTE_ALIGN: {
      using namespace fmt_byte_align;
      reserved(USED_BITS);
      in.flag = d.f(LE); in.dest = d.dst(DEST); in.a = d.src(A); in.b = d.src(B);
      break;
    }
    case OP_BITOP: {
      using namespace fmt_bitop;
      reserved(USED_BITS);
      in.sub = d.enum_value(OP, bitops::COUNT, bitops::NAMES, "bit op");
      in.dest = d.dst(DEST); in.b = d.src(SRC);
      break;
    }
    case OP_MUL_STEP: {
      using namespace fmt_mul_step;
      reserved(USED_BITS);
      in.sub = d.enum_value(STEP, mul_steps::COUNT, mul_steps::NAMES, "mul_step");
      in.dest = d.dst(DEST); in.a = d.src(A); in.b = d.src(B);
      break;
    }
    case OP_BR: {
      using namespace fmt_br;
      reserved(USED_BITS);
      in.sub = d.enum_value(COND, conditions::COUNT, conditions::NAMES, "branch condition");
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_BR_CTX: {
      using namespace fmt_br_ctx;
      reserved(USED_BITS);
      in.aux = static_cast<uint8_t>(d.f(CTX)); in.flag = d.f(NE);
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_BR_BIT: {
      using namespace fmt_br_bit;
      reserved(USED_BITS);
      in.b = d.src(REG); in.aux = static_cast<uint8_t>(d.f(BIT)); in.flag = d.f(CLR);
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_BR_BYTE: {
      using namespace fmt_br_byte;
      reserved(USED_BITS);
      in.b = d.src(REG); in.aux = static_cast<uint8_t>(d.f(BYTE)); in.imm = d.f(VALUE);
      in.flag = d.f(NE);
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_BR_SIGNAL: {
      using namespace fmt_br_signal;
      reserved(USED_BITS);
      in.sig = static_cast<uint8_t>(d.f(SIG)); in.flag = d.f(NOT);
      if (in.sig == 0) d.illegal("br_signal needs a signal 1..15");
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_BR_INP_STATE: {
      using namespace fmt_br_inp_state;
      reserved(USED_BITS);
      in.aux = d.enum_value(STATE, inp_states::COUNT, inp_states::NAMES, "input state");
      in.flag = d.f(NOT);
      in.target = d.target(TARGET); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_JUMP: {
      using namespace fmt_jump;
      reserved(USED_BITS);
      in.b = d.src(REG); in.flag = d.f(RTN);
      in.target = static_cast<uint16_t>(d.f(TARGET)); in.defer = static_cast<uint8_t>(d.f(DEFER));
      break;
    }
    case OP_CTX_ARB: {
      using namespace fmt_ctx_arb;
      reserved(USED_BITS);
      in.sub = d.enum_value(MODE, ctx_arb_modes::COUNT, ctx_arb_modes::NAMES, "ctx_arb mode");
      in.imm = d.f(SIGS); in.defer = static_cast<uint8_t>(d.f(DEFER));
      if (in.imm & 1) d.illegal("ctx_arb signal mask names signal 0 (signals are 1..15)");
      break;
    }
    case OP_LOCAL_CSR: {
      using namespace fmt_local_csr;
      reserved(USED_BITS);
      in.flag = d.f(WRITE);
      in.aux = d.enum_value(CSR, local_csrs::COUNT, local_csrs::NAMES, "local CSR");
      in.b = d.src(SRC);
      // the usual SAME_ME_SIGNAL write: its own handler (chip.hpp, H_SAME_ME_SIGNAL)
      if (in.flag && in.aux == local_csrs::SAME_ME_SIGNAL &&
          (in.b.kind == OpKind::GprA || in.b.kind == OpKind::GprB || in.b.kind == OpKind::Imm))
        in.handler = H_SAME_ME_SIGNAL;
      break;
    }
    case OP_CAM: {
      using namespace fmt_cam;
      reserved(USED_BITS);
      in.sub = d.enum_value(OP, cam_ops::COUNT, cam_ops::NAMES, "CAM op");
      // cam_lookup/read_tag/read_state write dest; cam_write/write_state read it (the entry)
      bool writes_dest = in.sub == cam_ops::CAM_LOOKUP || in.sub == cam_ops::CAM_READ_TAG ||
                         in.sub == cam_ops::CAM_READ_STATE;
      in.dest = writes_dest ? d.dst(DEST) : d.src(DEST);
      in.b = d.src(SRC); in.aux = static_cast<uint8_t>(d.f(STATE));
      break;
    }
    case OP_CRC: {
      using namespace fmt_crc;
      reserved(USED_BITS);
      in.sub = d.enum_value(KIND, crc_kinds::COUNT, crc_kinds::NAMES, "CRC kind");
      in.flag = d.f(LE); in.dest = d.dst(DEST); in.b = d.src(SRC);
      break;
    }
    case OP_HASH: {
      using namespace fmt_hash;
      reserved(USED_BITS);
      in.sub = d.enum_value(SIZE, hash_sizes::COUNT, hash_sizes::NAMES, "hash size");
      in.count = static_cast<uint8_t>(d.f(COUNT) + 1);  // stored minus one, like mem counts
      if (in.count > 3) fault("bad_command", "hash takes 1..3 keys, got 4");
      in.sig = static_cast<uint8_t>(d.f(SIG)); in.flag = d.f(SWAP);
      if (in.flag && in.sig == 0) fault("bad_command", "ctx_swap needs a signal (1..15)");
      int words_per_key = in.sub == hash_sizes::HASH_128 ? 4 : 2;
      in.xfer = d.xfer(XFER, in.count * words_per_key, true);
      in.aux = static_cast<uint8_t>(in.count * words_per_key);
      break;
    }
    case OP_SRAM: case OP_SCRATCH: case OP_DRAM: case OP_MSF:
      reserved(fmt_mem::USED_BITS);
      decode_mem(d, in, opcode);
      break;
    case OP_NOP:
      reserved(fmt_none::USED_BITS);
      break;
    default:
      d.illegal("reserved opcode " + std::to_string(opcode));
  }
  return in;
}

}  // namespace npkit
