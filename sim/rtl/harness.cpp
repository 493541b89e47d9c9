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

// A context that may trace: Verilator wants traceEverOn before the model is built.
struct TracingContext : VerilatedContext {
  TracingContext() { traceEverOn(true); }
};

struct Rtl {
  TracingContext context;
  Vnpk_me_sim top{&context};
  std::array<Retired, kTrace> trace{};
  uint64_t retired = 0;
  std::unique_ptr<VerilatedVcdC> vcd;  // an open waveform, if any
  uint64_t half_cycles = 0;            // its time axis: cycle k is at times 2k and 2k+1

  void half(int clk) {
    top.clk = clk;
    top.eval();
    if (vcd) vcd->dump(half_cycles);
    ++half_cycles;
  }
  // one clock cycle; the outputs sampled before the edge describe the cycle that ends
  void cycle() {
    half(0);
    if (top.retire) {
      trace[retired % kTrace] = Retired{top.cycle, top.retire_ctx, top.retire_pc};
      ++retired;
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

}  // namespace

extern "C" {

void* npk_rtl_new() {  // owned by the Python object, freed by npk_rtl_free
  Rtl* r = new Rtl();
  r->top.NPK_ME_OF(mutant) = 0;
  return r;
}

// Select a deliberately broken instruction (npk_me.sv, "mutants"); 0 = the clean RTL.
void npk_rtl_set_mutant(void* h, int mutant) {
  auto& top = static_cast<Rtl*>(h)->top;
  NPK_ME(mutant) = mutant & 15;
  top.eval();
}

void npk_rtl_free(void* h) {
  Rtl* r = static_cast<Rtl*>(h);
  if (r->vcd) r->vcd->close();
  delete r;
}

// Put an image in the control store and reset the ME (state as after Core.load).
int npk_rtl_load(void* h, const uint64_t* words, uint32_t n, int mode4, uint64_t prng_seed) {
  Rtl& r = *static_cast<Rtl*>(h);
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
  top.prng_seed = prng_seed;
  r.reset();
  return 0;
}

// Run up to max_cycles; stop early on a fault, or (until_idle) when no context can run.
// Returns the cycles run.
uint64_t npk_rtl_run(void* h, uint64_t max_cycles, int until_idle) {
  Rtl& r = *static_cast<Rtl*>(h);
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
  Rtl& r = *static_cast<Rtl*>(h);
  if (r.vcd) r.vcd->close();
  r.vcd = std::make_unique<VerilatedVcdC>();
  r.top.trace(r.vcd.get(), 99);
  r.vcd->open(path);
  if (!r.vcd->isOpen()) {
    r.vcd.reset();
    return -1;
  }
  return 0;
}

void npk_rtl_wave_close(void* h) {
  Rtl& r = *static_cast<Rtl*>(h);
  if (r.vcd) r.vcd->close();
  r.vcd.reset();
}

// A signal for ctx, pending from the next cycle on.
void npk_rtl_signal(void* h, int ctx, int sig) {
  auto& top = static_cast<Rtl*>(h)->top;
  top.sig_valid = 1;
  top.sig_ctx = ctx & 7;
  top.sig_num = sig & 15;
}

int npk_rtl_read(void* h, int file, uint32_t index, uint32_t* out) {
  uint32_t* p = file_word(*static_cast<Rtl*>(h), file, index);
  if (!p) return -1;
  *out = *p;
  return 0;
}

int npk_rtl_write(void* h, int file, uint32_t index, uint32_t value) {
  Rtl& r = *static_cast<Rtl*>(h);
  uint32_t* p = file_word(r, file, index);
  if (!p) return -1;
  *p = value;
  r.top.eval();
  return 0;
}

uint32_t npk_rtl_lm_words(void* h) {
  auto& top = static_cast<Rtl*>(h)->top;
  return count(NPK_ME(lm));
}

// out: pc, state, z, n, c, v, pending signals, instructions, lm_addr0, lm_addr1
void npk_rtl_context(void* h, int ci, uint64_t* out) {
  auto& top = static_cast<Rtl*>(h)->top;
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
  Rtl& r = *static_cast<Rtl*>(h);
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
  Rtl& r = *static_cast<Rtl*>(h);
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

}  // extern "C"
