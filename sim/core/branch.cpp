// Branches.  A handler decides taken / not taken; the dispatch loop applies defer slots and
// the taken-branch penalty.
#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;

Outcome take(Context& c, uint32_t target) {
  c.defer_target = target;
  return Outcome::Taken;
}

Outcome branch_if(Context& c, bool cond, const Insn& in) {
  return cond ? take(c, in.target) : Outcome::Next;
}

bool condition(const Context& c, uint8_t cond) {
  switch (cond) {
    case conditions::BR: return true;
    case conditions::BEQ: return c.z;
    case conditions::BNE: return !c.z;
    case conditions::BLT: return c.n != c.v;
    case conditions::BGE: return c.n == c.v;
    case conditions::BMI: return c.n;
    case conditions::BPL: return !c.n;
    case conditions::BCS: return c.c;
    case conditions::BCC: return !c.c;
    case conditions::BVS: return c.v;
    case conditions::BVC: return !c.v;
    case conditions::BGT: return !c.z && c.n == c.v;
    case conditions::BLE: return c.z || c.n != c.v;
    case conditions::BHI: return c.c && !c.z;
    default: return !c.c || c.z;  // BLS
  }
}

}  // namespace

Outcome exec_br(Chip&, ME&, Context& c, int, const Insn& in) {
  return branch_if(c, condition(c, in.sub), in);
}

Outcome exec_br_ctx(Chip&, ME&, Context& c, int ci, const Insn& in) {
  return branch_if(c, (ci == in.aux) != in.flag, in);
}

Outcome exec_br_bit(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  bool set = (chip.read(m, c, ci, in.b) >> in.aux) & 1;
  return branch_if(c, in.flag ? !set : set, in);
}

Outcome exec_br_byte(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t byte = (chip.read(m, c, ci, in.b) >> (8 * in.aux)) & 0xFF;
  return branch_if(c, (byte == in.imm) != in.flag, in);
}

// br_signal: taken if the signal is set; br_!signal: taken if it is not.  A signal that is
// observed set is consumed (cleared) by either form.
Outcome exec_br_signal(Chip&, ME&, Context& c, int, const Insn& in) {
  uint16_t bit = static_cast<uint16_t>(1u << in.sig);
  bool set = (c.signals & bit) != 0;
  c.signals &= static_cast<uint16_t>(~bit);
  return branch_if(c, set != in.flag, in);
}

Outcome exec_br_inp_state(Chip& chip, ME& m, Context& c, int, const Insn& in) {
  bool state;
  if (in.aux == inp_states::NN_EMPTY) state = chip.nn_empty(m);
  else if (in.aux == inp_states::NN_FULL) state = chip.nn_full_for(m);
  else if (in.aux >= inp_states::SCR_RING0_EMPTY) state = chip.scratch_ring_empty(in.aux - inp_states::SCR_RING0_EMPTY);
  else state = chip.scratch_ring_full(in.aux - inp_states::SCR_RING0_FULL);
  return branch_if(c, state != in.flag, in);
}

// jump[reg, label#] / rtn[reg]: to the address held in reg (the label is a hint only).
Outcome exec_jump(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t target = chip.read(m, c, ci, in.b);
  if (target >= chip.config().control_store_words)
    fault("control_store_overflow", "jump to " + std::to_string(target) + ", beyond the control store");
  return take(c, target);
}

}  // namespace npkit
