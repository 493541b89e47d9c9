// The C API the Python side (sim/rtl/rtlme.py, through ctypes) drives the Verilated
// npk_me_sim with: load an image, run cycles, read and write the architectural state.
// Built on demand by sim/rtl/build.py into a cache directory; never committed.
#include <array>
#include <cstdint>
#include <memory>

#include "Vnpk_me_sim.h"
#include "Vnpk_me_sim___024root.h"
#include "verilated.h"
#include "verilated_vcd_c.h"

namespace {

// the public arrays of the design (npk_me.sv marks them public_flat_rw)
#define NPK_ME(field) top.rootp->npk_me_sim__DOT__me__DOT__##field
#define NPK_ME_OF(field) rootp->npk_me_sim__DOT__me__DOT__##field

template <class T, std::size_t N>
constexpr uint32_t count(const VlUnpacked<T, N>&) {
  return static_cast<uint32_t>(N);
}

constexpr int kTrace = 64;  // retired instructions remembered for mismatch reports

struct Retired {
  uint64_t cycle;
  uint32_t ctx;
  uint32_t pc;
};

// The instruction retired in the last cycle run, with the command it issued (lockstep).
struct LastRetire {
  uint64_t cycle = 0, ctx = 0, pc = 0;
  uint64_t cmd_valid = 0, cmd_op = 0, cmd_sub = 0, cmd_xfer = 0, cmd_count = 0, cmd_sig = 0;
  uint64_t cmd_swap = 0, cmd_a = 0, cmd_b = 0;
};
constexpr int kLastRetireWords = 12;

// A context that may trace: Verilator wants traceEverOn before the model is built.
struct TracingContext : VerilatedContext {
  TracingContext() { traceEverOn(true); }
};

struct Rtl {
  TracingContext context;
  // the waveform writer, once made, lives as long as the model it is registered with
  // (declared before it: destroyed after it); closed and reopened, never deleted early
  std::unique_ptr<VerilatedVcdC> vcd;
  bool vcd_open = false;
  Vnpk_me_sim top{&context};
  std::array<Retired, kTrace> trace{};
  LastRetire last{};
  bool retired_now = false;  // the last cycle retired an instruction
  uint64_t retired = 0;
  uint64_t half_cycles = 0;            // its time axis: cycle k is at times 2k and 2k+1

  void half(int clk) {
    top.clk = clk;
    top.eval();
    if (vcd_open) vcd->dump(half_cycles);
    ++half_cycles;
  }
  // one clock cycle; the outputs sampled before the edge describe the cycle that ends
  void cycle() {
    half(0);
    retired_now = top.retire;
    if (top.retire) {
      trace[retired % kTrace] = Retired{top.cycle, top.retire_ctx, top.retire_pc};
      ++retired;
      last = LastRetire{top.cycle, top.retire_ctx, top.retire_pc, top.cmd_valid, top.cmd_op,
                        top.cmd_sub, top.cmd_xfer, top.cmd_count, top.cmd_sig, top.cmd_swap,
                        top.cmd_a, top.cmd_b};
    }
    half(1);
    top.sig_valid = 0;
  }
  void reset() {
    top.rst = 1;
    cycle();
    top.rst = 0;
    half(0);
    retired = 0;
  }
};

uint32_t* file_word(Rtl& r, int file, uint32_t i) {
  auto& top = r.top;
  switch (file) {
    case 0: return i < 128 ? &NPK_ME(gpr_a)[i] : nullptr;
    case 1: return i < 128 ? &NPK_ME(gpr_b)[i] : nullptr;
    case 2: return i < 128 ? &NPK_ME(xs_in)[i] : nullptr;
    case 3: return i < 128 ? &NPK_ME(xs_out)[i] : nullptr;
    case 4: return i < 128 ? &NPK_ME(xd_in)[i] : nullptr;
    case 5: return i < 128 ? &NPK_ME(xd_out)[i] : nullptr;
    case 6: return i < count(NPK_ME(lm)) ? &NPK_ME(lm)[i] : nullptr;
    case 7: return i < 128 ? &NPK_ME(nn)[i] : nullptr;
    case 8: {
      auto& next = top.rootp->npk_me_sim__DOT__next_nn;
      return i < count(next) ? &next[i] : nullptr;
    }
    default: return nullptr;
  }
}

// The model of a handle, made the thread's current Verilator context first (see npk_rtl_new).
Rtl& use(void* h) {
  Rtl& r = *static_cast<Rtl*>(h);
  Verilated::threadContextp(&r.context);
  return r;
}

}  // namespace

extern "C" {

// Verilator 5.006 erases a model's scopes from the *thread's* current context when the
// model is destroyed; with several models alive (one per RtlME) that context may be
// another model's, already freed.  So each model is made current before it is destroyed.
void* npk_rtl_new() {  // owned by the Python object, freed by npk_rtl_free
  Rtl* r = new Rtl();
  Verilated::threadContextp(&r->context);
  r->top.NPK_ME_OF(mutant) = 0;
  return r;
}

// Select a deliberately broken instruction (npk_me.sv, "mutants"); 0 = the clean RTL.
void npk_rtl_set_mutant(void* h, int mutant) {
  auto& top = use(h).top;
  NPK_ME(mutant) = mutant & 15;
  top.eval();
}

void npk_rtl_free(void* h) {
  Rtl* r = static_cast<Rtl*>(h);
  if (r->vcd_open) r->vcd->close();
  Verilated::threadContextp(&r->context);
  delete r;
  Verilated::threadContextp(nullptr);  // not the freed one
}

// Put an image in the control store and reset the ME (state as after Core.load).
int npk_rtl_load(void* h, const uint64_t* words, uint32_t n, int mode4, uint64_t prng_seed,
                 int me_number) {
  Rtl& r = use(h);
  auto& top = r.top;
  auto& cs = top.rootp->npk_me_sim__DOT__cstore;
  if (n > count(cs)) return -1;
  for (uint32_t i = 0; i < count(cs); ++i) cs[i] = i < n ? words[i] : 0;
  top.rootp->npk_me_sim__DOT__image_words = n;
  // every register file and local memory zero, as on a fresh chip (Core.load zeroes the
  // register files; a fresh chip's local memory is zero)
  for (int file = 0; file <= 7; ++file)
    for (uint32_t i = 0;; ++i) {
      uint32_t* p = file_word(r, file, i);
      if (!p) break;
      *p = 0;
    }
  // the neighbours: unconfigured scratch rings are empty and not full; the next ME's NN
  // registers start at zero with an empty ring (as an unloaded ME of the model)
  top.rootp->npk_me_sim__DOT__scr_full = 0;
  top.rootp->npk_me_sim__DOT__scr_empty = 0xFFFF;
  auto& next = top.rootp->npk_me_sim__DOT__next_nn;
  for (uint32_t i = 0; i < count(next); ++i) next[i] = 0;
  top.rootp->npk_me_sim__DOT__next_put = 0;
  top.rootp->npk_me_sim__DOT__next_get = 0;
  top.mode4 = mode4 ? 1 : 0;
  top.me_number = me_number & 31;
  top.prng_seed = prng_seed;
  r.reset();
  return 0;
}

// Run up to max_cycles; stop early on a fault, or (until_idle) when no context can run.
// Returns the cycles run.
uint64_t npk_rtl_run(void* h, uint64_t max_cycles, int until_idle) {
  Rtl& r = use(h);
  uint64_t n = 0;
  while (n < max_cycles) {
    if (r.top.fault) break;
    if (until_idle && r.top.idle && !r.top.sig_valid) break;  // a signal still to deliver
    r.cycle();
    ++n;
  }
  return n;
}

// Write a VCD waveform of every signal from now on (until npk_rtl_wave_close); 0 on success.
int npk_rtl_wave_open(void* h, const char* path) {
  Rtl& r = use(h);
  if (!r.vcd) {
    r.vcd = std::make_unique<VerilatedVcdC>();
    r.top.trace(r.vcd.get(), 99);
  } else if (r.vcd_open) {
    r.vcd->close();
  }
  r.vcd_open = false;
  r.vcd->open(path);
  if (!r.vcd->isOpen()) return -1;
  r.vcd_open = true;
  return 0;
}

void npk_rtl_wave_close(void* h) {
  Rtl& r = use(h);
  if (r.vcd_open) r.vcd->close();
  r.vcd_open = false;
}

// A signal for ctx, pending from the next cycle on.
void npk_rtl_signal(void* h, int ctx, int sig) {
  auto& top = use(h).top;
  top.sig_valid = 1;
  top.sig_ctx = ctx & 7;
  top.sig_num = sig & 15;
}

int npk_rtl_read(void* h, int file, uint32_t index, uint32_t* out) {
  uint32_t* p = file_word(use(h), file, index);
  if (!p) return -1;
  *out = *p;
  return 0;
}

int npk_rtl_write(void* h, int file, uint32_t index, uint32_t value) {
  Rtl& r = use(h);
  uint32_t* p = file_word(r, file, index);
  if (!p) return -1;
  *p = value;
  r.top.eval();
  return 0;
}

uint32_t npk_rtl_lm_words(void* h) {
  auto& top = use(h).top;
  return count(NPK_ME(lm));
}

// out: pc, state, z, n, c, v, pending signals, instructions, lm_addr0, lm_addr1
void npk_rtl_context(void* h, int ci, uint64_t* out) {
  auto& top = use(h).top;
  ci &= 7;
  out[0] = NPK_ME(pc)[ci];
  out[1] = NPK_ME(state)[ci];
  out[2] = NPK_ME(cc_z)[ci];
  out[3] = NPK_ME(cc_n)[ci];
  out[4] = NPK_ME(cc_c)[ci];
  out[5] = NPK_ME(cc_v)[ci];
  out[6] = NPK_ME(signals)[ci];
  out[7] = NPK_ME(instructions)[ci];
  out[8] = NPK_ME(lm_addr)[ci][0];
  out[9] = NPK_ME(lm_addr)[ci][1];
}

// out: cycle, idle, fault, fault word, fault pc, fault ctx, instructions retired
void npk_rtl_status(void* h, uint64_t* out) {
  Rtl& r = use(h);
  auto& top = r.top;
  out[0] = top.cycle;
  out[1] = top.idle;
  out[2] = top.fault;
  out[3] = top.fault_word;
  out[4] = top.fault_pc;
  out[5] = top.fault_ctx;
  out[6] = r.retired;
}

// The last retired instructions, oldest first, as (cycle, ctx, pc) triples; returns the count.
int npk_rtl_trace(void* h, uint64_t* out, int max) {
  Rtl& r = use(h);
  uint64_t n = r.retired < static_cast<uint64_t>(kTrace) ? r.retired : kTrace;
  if (n > static_cast<uint64_t>(max)) n = static_cast<uint64_t>(max);
  for (uint64_t k = 0; k < n; ++k) {
    const Retired& t = r.trace[(r.retired - n + k) % kTrace];
    out[3 * k] = t.cycle;
    out[3 * k + 1] = t.ctx;
    out[3 * k + 2] = t.pc;
  }
  return static_cast<int>(n);
}

// ---------------------------------------------------------------- lockstep (lockstep.py)

// Run cycles while the cycle counter is below `limit`, stopping after the first cycle that
// retires an instruction.  Returns 1 (retired; out: cycle, ctx, pc, then the command:
// valid, op, sub, xfer, count, sig, swap, a, b), 0 (reached the limit) or -1 (a fault).
int npk_rtl_until(void* h, uint64_t limit, uint64_t* out) {
  Rtl& r = use(h);
  while (r.top.cycle < limit) {
    if (r.top.fault) return -1;
    r.cycle();
    if (r.retired_now) {
      const LastRetire& l = r.last;
      const uint64_t v[kLastRetireWords] = {l.cycle, l.ctx, l.pc, l.cmd_valid, l.cmd_op,
                                            l.cmd_sub, l.cmd_xfer, l.cmd_count, l.cmd_sig,
                                            l.cmd_swap, l.cmd_a, l.cmd_b};
      for (int k = 0; k < kLastRetireWords; ++k) out[k] = v[k];
      return 1;
    }
  }
  return r.top.fault ? -1 : 0;
}

// A delivery from the memory model, effective in the next cycle run: signal `sig` (0: none)
// for ctx, and with `counts` one command of the FIFO completed.
void npk_rtl_deliver(void* h, int ctx, int sig, int counts) {
  auto& top = use(h).top;
  if (sig > 0 && sig < 16) NPK_ME(signals)[ctx & 7] |= static_cast<uint16_t>(1u << sig);
  if (counts && NPK_ME(outstanding) > 0) NPK_ME(outstanding)--;
  top.eval();
}

// The inputs from outside the ME before an instruction: the transfer-in registers (what
// completions wrote), this ME's NN registers and NN_PUT (the previous ME's writes), the
// next ME's NN_PUT/NN_GET (its ring as it set and read it) and the scratch ring states.
void npk_rtl_inputs(void* h, const uint32_t* xs_in, const uint32_t* xd_in, const uint32_t* nn,
                    uint32_t nn_put, uint32_t next_put, uint32_t next_get, uint32_t ring_full,
                    uint32_t ring_empty) {
  Rtl& r = use(h);
  auto& top = r.top;
  for (uint32_t i = 0; i < 128; ++i) {
    NPK_ME(xs_in)[i] = xs_in[i];
    NPK_ME(xd_in)[i] = xd_in[i];
    NPK_ME(nn)[i] = nn[i];
  }
  NPK_ME(nn_put) = nn_put & 127;
  top.rootp->npk_me_sim__DOT__next_put = next_put & 127;
  top.rootp->npk_me_sim__DOT__next_get = next_get & 127;
  top.rootp->npk_me_sim__DOT__scr_full = ring_full & 0xFFFF;
  top.rootp->npk_me_sim__DOT__scr_empty = ring_empty & 0xFFFF;
  top.eval();
}

// The architectural state in the model's Chip::lockstep_state layout (sim/core/lockstep.cpp):
// files 0..5 (128 words each), local memory, NN, the next ME's NN, per context pc and ZNCV,
// the outstanding commands.  Returns the words written (0 when max is too small).
uint32_t npk_rtl_state(void* h, uint32_t* out, uint32_t max) {
  Rtl& r = use(h);
  auto& top = r.top;
  const uint32_t lm = count(NPK_ME(lm));
  const uint32_t n = 6 * 128 + lm + 2 * 128 + 16 + 1;
  if (max < n) return 0;
  uint32_t k = 0;
  for (int file = 0; file <= 5; ++file)
    for (uint32_t i = 0; i < 128; ++i) out[k++] = *file_word(r, file, i);
  for (uint32_t i = 0; i < lm; ++i) out[k++] = NPK_ME(lm)[i];
  for (int file = 7; file <= 8; ++file)
    for (uint32_t i = 0; i < 128; ++i) {
      uint32_t* p = file_word(r, file, i);
      out[k++] = p ? *p : 0;
    }
  for (int ci = 0; ci < 8; ++ci) {
    out[k++] = NPK_ME(pc)[ci];
    out[k++] = (NPK_ME(cc_z)[ci] ? 8u : 0u) | (NPK_ME(cc_n)[ci] ? 4u : 0u) |
               (NPK_ME(cc_c)[ci] ? 2u : 0u) | (NPK_ME(cc_v)[ci] ? 1u : 0u);
  }
  out[k++] = NPK_ME(outstanding);
  return k;
}

// Start from the model's state (same layout): the register files, local memory, NN files
// and the cycle counter; the contexts stay as the load left them.  -1 on a short state.
int npk_rtl_set_state(void* h, const uint32_t* in, uint32_t n, uint64_t cycle) {
  Rtl& r = use(h);
  auto& top = r.top;
  const uint32_t lm = count(NPK_ME(lm));
  if (n < 6 * 128 + lm + 2 * 128) return -1;
  uint32_t k = 0;
  for (int file = 0; file <= 5; ++file)
    for (uint32_t i = 0; i < 128; ++i) *file_word(r, file, i) = in[k++];
  for (uint32_t i = 0; i < lm; ++i) NPK_ME(lm)[i] = in[k++];
  for (int file = 7; file <= 8; ++file)
    for (uint32_t i = 0; i < 128; ++i) {
      uint32_t* p = file_word(r, file, i);
      const uint32_t v = in[k++];
      if (p) *p = v;
    }
  NPK_ME(time_q) = cycle;
  top.eval();
  return 0;
}

}  // extern "C"
