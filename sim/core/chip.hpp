// The simulated chip: microengines, contexts, memories, units, the event queue and the
// scheduler.  How it works is described in docs/sim-core.md.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "frame_log.hpp"
#include "host_memory.hpp"
#include "isa_gen.hpp"

namespace npkit {

// ------------------------------------------------------------------ faults
// A fault is data: the binding turns it into the Python exception _core.SimFault.
struct SimError : std::runtime_error {
  std::string kind;
  int me, ctx;
  int64_t pc;
  SimError(std::string kind_, int me_, int ctx_, int64_t pc_, const std::string& msg)
      : std::runtime_error(msg), kind(std::move(kind_)), me(me_), ctx(ctx_), pc(pc_) {}
};

// A fault raised deep inside a unit, before the ME/ctx/PC are known; the dispatch loop adds them.
struct LocalFault : std::runtime_error {
  std::string kind;
  LocalFault(std::string kind_, const std::string& msg)
      : std::runtime_error(msg), kind(std::move(kind_)) {}
};
[[noreturn]] void fault(const char* kind, const std::string& msg);

// ------------------------------------------------------------------ zeroed host memory
// mmap'd (host_memory.hpp) so that untouched pages of the big memories cost nothing and a
// snapshot can share the pages with the live memory copy-on-write.
template <class T>
struct Memory {
  HostMemory host;
  size_t size = 0;  // elements
  void allocate(size_t n) {
    host.allocate(n * sizeof(T));
    size = n;
  }
  T* get() const { return reinterpret_cast<T*>(host.bytes()); }
  T& operator[](size_t i) const { return get()[i]; }
};

// ------------------------------------------------------------------ predecoded instructions
enum class OpKind : uint8_t {
  GprA, GprB, XferS, XferD, Nn, Lm0, Lm1, Lm0Inc, Lm0Dec, Lm1Inc, Lm1Dec, NnRing, None, Imm
};
struct Opnd { OpKind kind = OpKind::None; uint8_t idx = 0; };

// Handler indices: the major opcodes, plus one for a PC outside the loaded image, plus
// specialised handlers predecode picks when an instruction's operands allow (same
// semantics, fewer checks).  H_ALU_FAST + k: an alu/alu_shf whose operands are all plain
// register-file words or immediates (no local memory, next neighbour or ring access), one
// handler per (ALU operation, A kind, B kind and shift type) -- alu_fast_index -- so it
// runs with no operand, shift or operation switch, no out-of-line access and no fault path.
inline constexpr uint16_t H_OFF_END = isa::OPCODE_COUNT;
// A trace point (frame_log.hpp): the instruction's own handler, then a log entry.  Only
// set while a frame log is attached (Chip::set_trace_points); the original handler is kept
// in the log.
inline constexpr uint16_t H_TRACE_POINT = isa::OPCODE_COUNT + 1;
// The specialised ALU handlers' B kinds: a register read through the shifter (none when
// the amount is 0, else the shift type), or an immediate (shifted at load).
inline constexpr int kAluBRegNoShift = 0;  // 1..4: shift_types value + 1
inline constexpr int kAluBImm = 5;
inline constexpr int kAluBKinds = 6;
inline constexpr uint16_t H_ALU_FAST = isa::OPCODE_COUNT + 2;
inline constexpr int kAluFastCount = isa::alu_ops::COUNT * 2 * kAluBKinds;
constexpr uint16_t alu_fast_index(int op, bool a_imm, int b_kind) {
  return static_cast<uint16_t>(H_ALU_FAST + (op * 2 + (a_imm ? 1 : 0)) * kAluBKinds + b_kind);
}
// H_ALU_LM + op: an alu/alu_shf with a local-memory operand (*l$index0/1[k], not ++/--)
// and otherwise plain ones; the operand classes (kAluClass*) packed in Insn::aux.
inline constexpr uint16_t H_ALU_LM = H_ALU_FAST + kAluFastCount;
inline constexpr unsigned kAluClassReg = 0, kAluClassImm = 1, kAluClassLm0 = 2, kAluClassLm1 = 3;
// local_csr_wr[SAME_ME_SIGNAL, b] with b a GPR or an immediate (the usual form): the
// signal raised without the CSR switch and, under the quantum schedule, delivered at issue
// (exec_same_me_signal, ctx.cpp).  The handlers' table and the lockstep log treat it as
// OP_LOCAL_CSR otherwise.
inline constexpr uint16_t H_SAME_ME_SIGNAL = H_ALU_LM + isa::alu_ops::COUNT;
inline constexpr int kHandlerCount = H_SAME_ME_SIGNAL + 1;

// The register files of an ME in one flat array (ME::regs), in this order, each
// file_words(cfg, f) long; the last, kSink, only takes the writes of a destination `--`
// (the specialised ALU handlers write every result).  An operand of a specialised handler
// is an index into this array (relative to the context's first register), so reading it is
// one indexed load.
enum RegFile : uint8_t { kGprA, kGprB, kSramIn, kDramIn, kSramOut, kDramOut, kSink, kRegFiles };
inline int file_words(const ChipConfig& cfg, RegFile f) {
  return f <= kGprB ? cfg.gprs_per_bank : f < kSink ? cfg.xfer_per_kind
                    : std::max(cfg.gprs_per_bank, cfg.xfer_per_kind);
}
// first word of each file, [kRegFiles] = the array's length
inline std::array<uint32_t, kRegFiles + 1> reg_layout(const ChipConfig& cfg) {
  std::array<uint32_t, kRegFiles + 1> at{};
  for (int f = 0; f < kRegFiles; ++f)
    at[f + 1] = at[f] + static_cast<uint32_t>(file_words(cfg, static_cast<RegFile>(f)));
  return at;
}

struct Insn {
  uint16_t handler = H_OFF_END;
  uint8_t sub = 0;        // ALU op, immed variant, condition, command, mode, step, kind ...
  uint8_t shift = 0;      // shift type
  uint8_t shamt = 0;      // shift amount
  Opnd dest, a, b;
  uint8_t defer = 0;
  uint8_t sig = 0;
  uint8_t count = 0;      // memory commands: count (1..16), hash: keys (1..3)
  uint8_t xfer = 0;       // memory commands: first transfer register, 0xFF = none
  uint8_t aux = 0;        // bit / byte / ctx / mask / csr / cam state / inp state
  bool flag = false;      // swap | le | invert | ne | clr | not | rtn | write | indirect
  bool flag2 = false;     // ld_field load_cc
  uint16_t target = 0;
  uint32_t imm = 0;       // 16-bit immediate / byte value / signal mask; fast ALU: B shifted
  // fast ALU (H_ALU_FAST...): flat register indexes (ME::regs, context-relative) of the
  // A and B sources and the destination
  uint16_t reg_a = 0, reg_b = 0, reg_d = 0;
};

// ------------------------------------------------------------------ contexts and MEs
enum class CtxState : uint8_t { Inactive, Ready, Executing, Sleeping };
inline constexpr int kCtxStates = 4;
const char* ctx_state_name(CtxState s);

enum class Deferred : uint8_t { None, Branch, Swap };

struct Context {
  uint32_t pc = 0;
  CtxState state = CtxState::Inactive;
  bool enabled = false;
  // condition codes
  bool z = false, n = false, c = false, v = false;
  uint32_t last_alu = 0;            // for dbl_shf indirect
  uint16_t signals = 0;             // pending signals (bit n = signal n)
  uint16_t wait_mask = 0;
  bool wait_any = false;
  // deferred branch / swap
  uint8_t defer_left = 0;
  Deferred deferred = Deferred::None;
  uint32_t defer_target = 0;
  uint8_t swap_mode = 0;            // ctx_arb mode of a deferred swap
  // local CSR state held per context
  uint32_t lm_addr[2] = {0, 0};
  uint32_t lm_pending[2] = {0, 0};
  uint64_t lm_apply_at[2] = {UINT64_MAX, UINT64_MAX};  // ctx instruction count
  uint32_t byte_index = 0;
  uint32_t crc_remainder = 0;
  bool csr_pending = false;
  uint32_t csr_value = 0;
  // mul_step
  uint8_t mul_next = 0xFF;          // the step expected next, 0xFF = none in progress
  uint64_t mul_product = 0;
  // counters
  uint64_t instructions = 0;
  uint64_t state_cycles[kCtxStates] = {0, 0, 0, 0};
  uint64_t state_since = 0;
};

struct Unit;  // a memory/unit channel

struct ME {
  int index = 0;
  int number = 0;
  int contexts = 0;         // 8 or 4 (0: not loaded)
  int per_ctx = 16;         // relative registers per context per file
  uint32_t image_words = 0;
  std::vector<Insn> code;   // control_store_words entries; unloaded words are H_OFF_END
  // the register files (RegFile order, reg_layout) and the views of each
  std::vector<uint32_t> regs;
  std::array<uint32_t, kRegFiles + 1> file_at{};
  std::span<uint32_t> file(RegFile f) { return {regs.data() + file_at[f], file_at[f + 1] - file_at[f]}; }
  std::span<const uint32_t> file(RegFile f) const {
    return {regs.data() + file_at[f], file_at[f + 1] - file_at[f]};
  }
  std::span<uint32_t> gpr_a() { return file(kGprA); }
  std::span<uint32_t> gpr_b() { return file(kGprB); }
  std::span<uint32_t> sram_in() { return file(kSramIn); }
  std::span<uint32_t> dram_in() { return file(kDramIn); }
  std::span<uint32_t> sram_out() { return file(kSramOut); }
  std::span<uint32_t> dram_out() { return file(kDramOut); }
  std::span<const uint32_t> gpr_a() const { return file(kGprA); }
  std::span<const uint32_t> gpr_b() const { return file(kGprB); }
  std::span<const uint32_t> sram_in() const { return file(kSramIn); }
  std::span<const uint32_t> dram_in() const { return file(kDramIn); }
  std::span<const uint32_t> sram_out() const { return file(kSramOut); }
  std::span<const uint32_t> dram_out() const { return file(kDramOut); }
  std::vector<uint32_t> nn;
  Memory<uint32_t> lm;
  std::array<Context, 8> ctx{};
  int cur = -1;             // executing context
  int last = 7;             // last context picked by the arbiter (round robin)
  uint64_t time = 0;        // local time
  bool fifo_stalled = false; // command FIFO full: waits for one of its commands to complete
  int outstanding = 0;      // commands issued, not completed
  uint32_t ready_mask = 0;  // bit ci set: context ci is Ready (the arbiter picks from these)
  // local CSRs held per ME
  uint32_t nn_put = 0, nn_get = 0;
  uint32_t ctx_arb_cntl = 0;
  uint32_t mailbox[4] = {0, 0, 0, 0};
  uint64_t prng = 0;
  // CAM
  struct CamEntry { uint32_t tag = 0; uint8_t state = 0; bool valid = false; };
  std::vector<CamEntry> cam;
  std::vector<uint8_t> cam_lru;  // entry numbers, least recently used first
  // counters
  uint64_t instructions = 0, busy = 0, idle = 0, stalled = 0;

  bool has_ready() const;
};

// ------------------------------------------------------------------ units
struct Unit {
  std::string name;
  ChannelConfig cfg;
  uint64_t free_at_fp = 0;          // channel free time, cycles << 16 (fractional occupancy)
  uint64_t commands = 0, bytes = 0, busy_fp = 0;
  // Schedule a command of `bytes` issued at t; returns the completion cycle.
  uint64_t schedule(uint64_t t, uint32_t nbytes, bool write);
  // Same with a fixed occupancy in cycles.
  uint64_t schedule_cycles(uint64_t t, uint64_t cycles, uint32_t nbytes);
  uint64_t schedule_fp(uint64_t t, uint64_t occupancy_fp, uint32_t nbytes);
  double busy_cycles() const;
};

struct Ring {
  bool configured = false;
  uint32_t base = 0, size = 0, head = 0, tail = 0, count = 0;
  uint32_t high_water = 0;
  uint64_t puts = 0, gets = 0;
};

struct QueueDesc { uint32_t head = 0, tail = 0, count = 0; };

// A completion: write transfer-in registers and raise a signal.
struct Event {
  uint64_t time = 0;
  uint64_t seq = 0;
  int16_t me = 0;
  int8_t ctx = 0;
  int8_t sig = 0;
  uint8_t file = 0;     // 0: SRAM-in, 1: DRAM-in
  uint8_t xfer = 0;
  uint8_t nwords = 0;
  bool counts = true;   // completes an issued command (command FIFO)
  // Only words[0..nwords) are ever read (post copies those, deliver writes those): left
  // uninitialised, so building an Event does not zero 128 bytes per command.
  std::array<uint32_t, 32> words;
};
// The event heap holds small keys; the payloads live in a pool with a free list, so a heap
// sift moves 24 bytes instead of a whole Event.
struct EventKey {
  uint64_t time;
  uint64_t seq;
  uint32_t slot;  // index into the payload pool
};
struct EventKeyLater {
  // one 128-bit compare of (time, seq): no branch to mispredict inside the heap sifts
  bool operator()(const EventKey& x, const EventKey& y) const {
    using u128 = unsigned __int128;
    return ((static_cast<u128>(x.time) << 64) | x.seq) > ((static_cast<u128>(y.time) << 64) | y.seq);
  }
};

// Pending events, popped in (time, seq) order.  Events due within kWheel cycles of base_
// go to a bucket per cycle (a FIFO: posts arrive in seq order, so a bucket stays sorted and
// holds one time value); later ones to a binary heap.  pop compares the two heads by
// (time, seq), so the order is exact whatever the mix; base_ only follows the popped times
// (never above a pending event), which keeps every wheel event in [base_, base_ + kWheel).
class EventQueue {
 public:
  static constexpr uint64_t kWheel = 1024;  // power of two, > the usual memory latencies

  EventQueue() : buckets_(kWheel) {}
  bool empty() const { return wheel_count_ == 0 && heap_.empty(); }
  uint64_t top_time() const { return wheel_min_ < heap_min_ ? wheel_min_ : heap_min_; }
  void push(uint64_t time, uint64_t seq, uint32_t slot) {
    if (time >= base_ && time - base_ < kWheel) {
      Bucket& b = buckets_[time & kMask];
      b.items.push_back(Item{seq, slot});
      bits_[(time & kMask) >> 6] |= 1ULL << (time & 63);
      if (time < wheel_min_) wheel_min_ = time;
      ++wheel_count_;
    } else {
      heap_.push_back(EventKey{time, seq, slot});
      std::push_heap(heap_.begin(), heap_.end(), EventKeyLater{});
      heap_min_ = heap_.front().time;
    }
  }
  // The slot of the smallest (time, seq); the queue must not be empty.
  uint32_t pop() {
    bool from_wheel = wheel_count_ != 0;
    if (from_wheel && !heap_.empty()) {
      const Bucket& b = buckets_[wheel_min_ & kMask];
      from_wheel = EventKeyLater{}(heap_.front(), EventKey{wheel_min_, b.items[b.head].seq, 0});
    }
    if (!from_wheel) {
      const EventKey k = heap_.front();
      std::pop_heap(heap_.begin(), heap_.end(), EventKeyLater{});
      heap_.pop_back();
      heap_min_ = heap_.empty() ? UINT64_MAX : heap_.front().time;
      if (k.time > base_) base_ = k.time;
      return k.slot;
    }
    const uint64_t t = wheel_min_;
    Bucket& b = buckets_[t & kMask];
    const uint32_t slot = b.items[b.head++].slot;
    --wheel_count_;
    base_ = t;
    if (b.head == b.items.size()) {
      b.items.clear();
      b.head = 0;
      bits_[(t & kMask) >> 6] &= ~(1ULL << (t & 63));
      wheel_min_ = wheel_count_ ? next_in_wheel(t + 1) : UINT64_MAX;
    }
    return slot;
  }

 private:
  static constexpr uint64_t kMask = kWheel - 1;
  struct Item { uint64_t seq; uint32_t slot; };
  struct Bucket { std::vector<Item> items; size_t head = 0; };
  // smallest time >= t whose bucket holds events (one exists within kWheel cycles)
  uint64_t next_in_wheel(uint64_t t) const {
    for (uint64_t d = 0; d < kWheel;) {
      const uint64_t idx = (t + d) & kMask;
      const uint64_t word = bits_[idx >> 6] >> (idx & 63);
      if (word) return t + d + static_cast<uint64_t>(__builtin_ctzll(word));
      d += 64 - (idx & 63);
    }
    return UINT64_MAX;
  }
  std::vector<Bucket> buckets_;
  std::array<uint64_t, kWheel / 64> bits_{};
  uint64_t base_ = 0;
  uint64_t wheel_min_ = UINT64_MAX;
  size_t wheel_count_ = 0;
  std::vector<EventKey> heap_;  // min-heap on (time, seq) via EventKeyLater
  uint64_t heap_min_ = UINT64_MAX;  // heap_.front().time, UINT64_MAX when empty: top_time()
                                    // is asked on every scheduler step
};

// The scheduler's run queue: one key per loaded ME position k, (local time << kPosBits) | k
// when the ME can run, else kNone, in a tournament tree whose root is the smallest key --
// the ME with the smallest local time, the lowest position on a tie, which is the order the
// scheduler runs MEs in.  Reading the minimum is one load; a key change is one pass from
// its leaf up, which stops where the subtree's minimum no longer changes.  (It replaced a
// scan over the runnable MEs per scheduler step: ~7 of 16 MEs are runnable on the compiled
// router, whose polling threads never sleep.)
class RunQueue {
 public:
  static constexpr int kPosBits = 6;  // up to 64 loaded MEs (config.cpp)
  static constexpr uint64_t kNone = UINT64_MAX;
  static constexpr uint64_t kMaxTime = (UINT64_MAX >> kPosBits) - 1;
  static uint64_t pack(uint64_t time, int pos) {
    return (time << kPosBits) | static_cast<uint64_t>(pos);
  }
  static uint64_t time_of(uint64_t key) { return key >> kPosBits; }
  static size_t pos_of(uint64_t key) { return static_cast<size_t>(key & ((1u << kPosBits) - 1)); }

  void reset(size_t n) {
    size_t leaves = 1;
    while (leaves < n) leaves <<= 1;
    leaves_ = leaves;
    node_.assign(2 * leaves, kNone);
  }
  void set(size_t pos, uint64_t key) {
    size_t i = leaves_ + pos;
    if (node_[i] == key) return;
    node_[i] = key;
    for (i >>= 1; i; i >>= 1) {
      const uint64_t v = std::min(node_[2 * i], node_[2 * i + 1]);
      if (node_[i] == v) break;
      node_[i] = v;
    }
  }
  uint64_t top() const { return node_[1]; }  // kNone when no ME can run

 private:
  size_t leaves_ = 1;
  std::vector<uint64_t> node_ = std::vector<uint64_t>(2, kNone);  // node_[1] is the root
};

struct TraceInterval { int me, ctx; CtxState state; uint64_t start, end; };

// Debugger hooks (docs/sim-core.md, "Debug hooks"): stop conditions for run() and per-PC
// execution counts.  Observation and control, not simulated state: a snapshot leaves them
// alone.  While none is set run() takes the dispatch loop without them (run_me<false>).
struct DebugWatch {
  int kind = 0;          // 0 SRAM (unit = channel), 1 DRAM, 2 scratch, 3 local memory (unit = ME)
  int unit = 0;
  uint64_t offset = 0;   // first byte within the memory
  uint64_t bytes = 0;
  std::vector<uint8_t> seen;  // the bytes as last seen (taken at each run's start)
};
// One entry of the lockstep log (lockstep.cpp; docs/rtl.md, "Lockstep inside the chip"):
// what the RTL mirror of one ME must replay -- an instruction the ME retired (with the
// inputs it saw from outside the ME), or a delivery to it (a signal, a completed command).
struct LockstepRecord {
  uint64_t time = 0;      // retire: the cycle it ran in; delivery: the cycle it takes effect
  uint32_t kind = 0;      // 0 retired instruction, 1 delivery
  int32_t ctx = 0;
  uint32_t pc = 0;        // retire: its PC; delivery: the signal (0: none)
  uint32_t counts = 0;    // delivery: completes a command of the command FIFO
  uint32_t a = 0, b = 0;  // retire: the A and B operand values of a command
  uint32_t nn_put = 0, next_put = 0, next_get = 0;  // retire: NN_PUT; the next ME's PUT, GET
  uint32_t ring_full = 0, ring_empty = 0;  // retire: scratch ring states (bit r: ring r)
};
inline constexpr uint32_t kLockstepRetire = 0, kLockstepDelivery = 1;

struct DebugHooks {
  // lockstep: the ME whose instructions and deliveries are logged (-1: none); each retired
  // instruction of it stops the run ("lockstep") so the mirror can compare state
  int lockstep_me = -1;
  std::vector<LockstepRecord> lockstep_log;
  LockstepRecord lockstep_next;  // the instruction about to run (filled before it)
  // fault injection for the lockstep's own test: after the instruction at corrupt_pc of ME
  // corrupt_me retires, bit 0 of its GPR destination flips (a broken C++ semantic)
  int corrupt_me = -1;
  uint32_t corrupt_pc = 0;
  std::vector<std::vector<uint8_t>> breakpoints;  // per ME index: 1 at a PC that stops
  int breakpoint_count = 0;
  int step_me = -1, step_ctx = -1;                // stop after that context retires
  uint64_t step_left = 0;                         // ... this many more instructions
  std::vector<DebugWatch> watches;                // stop after a write changes one
  bool any_lm_watch = false;
  bool coverage = false;
  std::vector<std::vector<uint64_t>> counts;      // per ME index, per PC: retirements
  // why the last run stopped early ("" when it did not) and where
  std::string stop;
  int stop_me = -1, stop_ctx = -1, stop_watch = -1;
  uint32_t stop_pc = 0;
  // the breakpoint the last run stopped at: passed over once when the run resumes there
  int resume_me = -1;
  uint64_t resume_retired = 0;
  bool active() const {
    return breakpoint_count > 0 || step_left > 0 || !watches.empty() || coverage ||
           lockstep_me >= 0;
  }
};
// The schedule's shape: how many bursts end for which reason, how many event steps deliver
// how many events.  Counted only in a build with -DNPKIT_BURST_STATS (printed to stderr
// when the chip is destroyed; docs/performance.md, fourth round, says how to build one), so
// the release build's hot path pays nothing.
#ifdef NPKIT_BURST_STATS
struct BurstStats {
  uint64_t bursts = 0, same_me_next = 0, event_steps = 0, events = 0;
  uint64_t end_event = 0, end_cap = 0, end_own = 0, end_limit = 0, end_idle = 0, end_stall = 0;
  int last_me = -1;
  ~BurstStats();
};
#endif

// Outcome of one instruction.
enum class Outcome : uint8_t { Next, Taken, Swap, Stall };

// ------------------------------------------------------------------ the quantum schedule
// A memory/unit command as issued under the quantum schedule (docs/sim-core.md, "The
// quantum schedule"): everything its effect needs, read at issue, so that the units can
// take it at the quantum's end.  `kind` is the major opcode (isa::OP_SRAM ...).
struct PendingCmd {
  uint64_t t = 0;          // issue cycle
  int16_t me = 0;
  int8_t ci = 0;
  uint8_t kind = 0;
  uint32_t pc = 0;
  Insn in{};
  uint32_t a = 0, b = 0;   // the address operands' values at issue
  std::array<uint32_t, 32> words;  // transfer-out words at issue (not zeroed: only the used)
};
// The effect of a deferred command (memory.cpp): memory, unit, completion event.
class Chip;
void apply_command(Chip& chip, const PendingCmd& cmd);

// ------------------------------------------------------------------ the chip
struct ChipSnapshot;

class Chip : public MediaHost {
 public:
  Chip(ChipConfig cfg, uint64_t seed);
  ~Chip() override;
  Chip(const Chip&) = delete;
  Chip& operator=(const Chip&) = delete;

  const ChipConfig& config() const { return cfg_; }

  // A copy of the whole simulated state, and putting it back (snapshot.cpp; docs/sim-core.md,
  // "Snapshot and restore").  snapshot() maps the big memories copy-on-write onto the
  // snapshot's images (same contents, same addresses).  restore() takes a snapshot of this
  // chip only; the trace setting and the trace intervals not yet taken are left as they are.
  std::shared_ptr<const ChipSnapshot> snapshot();
  void restore(const ChipSnapshot& snap);

  void load(int me, const std::vector<uint64_t>& words, int ctx_mode);
  [[gnu::noinline]] std::string run(uint64_t max_cycles, int64_t stop_tx_frames, bool until_idle);
  uint64_t now() const { return now_; }
  uint64_t instructions_retired() const { return retired_; }

  // memories (for numpy views)
  uint32_t* sram_data(int ch, size_t& words);
  uint8_t* dram_data(size_t& bytes);
  uint32_t* scratch_data(size_t& words);
  uint32_t* lm_data(int me, size_t& words);

  void configure_ring(int ring, uint32_t base_word, uint32_t size_words);
  const Ring& ring(int r) const;
  // Host (control-processor) access to a scratch ring, with the ME commands' semantics:
  // a put that does not fit throws; a get of n words takes all n or nothing.
  void ring_put(int ring, const std::vector<uint32_t>& words);
  std::vector<uint32_t> ring_get(int ring, uint32_t count);
  void enqueue(int channel, uint32_t queue, uint32_t handle);
  uint32_t dequeue(int channel, uint32_t queue);
  const QueueDesc& queue(int channel, uint32_t queue) const;

  Media& media() { return *media_; }
  void add_rx_frame(int port, std::vector<uint8_t> bytes, int64_t not_before);

  uint32_t read_reg(int me, int ctx, uint32_t code);
  void write_reg(int me, int ctx, uint32_t code, uint32_t value);
  uint32_t read_xfer_out(int me, int ctx, int kind, int index);
  const ME& me(int i) const;
  const std::vector<Unit>& sram_units() const { return sram_; }
  const std::vector<Unit>& dram_units() const { return dram_; }
  const Unit& scratch_unit() const { return scratch_unit_; }
  const Unit& hash_unit() const { return hash_unit_; }
  const Unit& msf_unit() const { return msf_unit_; }
  const std::vector<Ring>& rings() const { return rings_; }

  void set_trace(bool on) { tracing_ = on; }
  DebugHooks& debug() { return debug_; }
  // re-read the watched bytes (run() does at its start in debug mode)
  void debug_capture_watches();
  // The lockstep ME's architectural state, flat (lockstep.cpp, kLockstepLayout order).
  std::vector<uint32_t> lockstep_state(int me);
  std::vector<TraceInterval> take_trace();
  // The per-frame event log and utilisation probe (frame_log.hpp; docs/debugging.md,
  // "Per-packet traces").  Attaching a new log replaces the old one (its trace points
  // are removed); nullptr detaches.  Observation only: no simulated result changes.
  void set_frame_log(std::unique_ptr<FrameLog> log);
  void enable_frame_log(const FrameLogConfig& cfg);  // a new log sized for this chip
  FrameLog* frame_log() const { return frame_log_.get(); }
  // Make the instructions at `pcs` of ME `me` trace points of the attached log.
  void set_trace_points(int me, const std::vector<uint32_t>& pcs);
  // context cycles per state, including the open interval up to `now`
  uint64_t ctx_cycles(int me, int ctx, CtxState s) const;

  // MediaHost
  void autopush(int me, int ctx, int xfer, const uint32_t* words, int n, int sig,
                uint64_t when) override;

  // ---- used by the instruction semantics (alu.cpp, branch.cpp, memory.cpp, ...)
  uint32_t read(ME& m, Context& c, int ci, Opnd o);
  void write(ME& m, Context& c, int ci, Opnd o, uint32_t v);
  uint32_t read_dest(ME& m, Context& c, int ci, Opnd o);
  uint32_t read_slow(ME& m, Context& c, int ci, Opnd o);
  void write_slow(ME& m, Context& c, int ci, Opnd o, uint32_t v);
  uint32_t lm_addr(Context& c, int which);
  void set_lm_addr(Context& c, int which, uint32_t v, bool immediate);
  void raise_signal(int me, int ctx, int sig, uint64_t when);
  // local_csr_wr[SAME_ME_SIGNAL] by the running ME m with the CSR value v (t + 1)
  void same_me_signal(ME& m, uint32_t v);
  void set_ctx_state(ME& m, int ci, CtxState s) { set_state(m, ci, s, m.time); }
  void post(const Event& ev);  // schedule a completion (copies the header and nwords words)
  bool scratch_ring_full(int r) const;
  bool scratch_ring_empty(int r) const;
  bool nn_empty(const ME& m) const { return m.nn_put == m.nn_get; }
  bool nn_full(const ME& m) const { return ((m.nn_put + 1) % m.nn.size()) == m.nn_get; }
  // The next ME's NN ring as its writer sees it: with the writer's puts of the quantum.
  bool nn_full_for(const ME& writer) {
    const ME& nx = next_me(writer);
    const uint32_t put = nx.nn_put + (q_me_ >= 0 ? q_nn_puts_ : 0);
    return ((put + 1) % nx.nn.size()) == nx.nn_get;
  }
  ME& next_me(const ME& m) { return mes_[(m.index + 1) % mes_.size()]; }
  ME& me_at(int i) { return mes_[i]; }
  // A command completing at t (or an MSF command, t = its issue cycle + 1) ends the
  // running burst before t.
  void shorten_burst(uint64_t t) {
    if (t < burst_end_) burst_end_ = t;
    if (t < burst_stop_) burst_stop_ = t;
  }

  // The quantum schedule (docs/sim-core.md, "The quantum schedule").  set_schedule takes
  // "default" or "quantum"; the quantum's length is derived from the config (quantum_for).
  void set_schedule(const std::string& name);
  const char* schedule() const { return quantum_ ? "quantum" : "default"; }
  uint64_t quantum_cycles() const { return quantum_for(cfg_); }
  static uint64_t quantum_for(const ChipConfig& cfg);
  // true while an ME runs inside a quantum: its commands are recorded, not applied
  bool deferring() const { return q_me_ >= 0; }
  PendingCmd& defer_command() {  // slots are reused: no zeroing of the 32 words per command
    if (pending_used_ == pending_.size()) pending_.emplace_back();
    return pending_[pending_used_++];
  }
  // A scratch ring put/get the running ME issued in this quantum: its own ring-status tests
  // see it at once (the ring itself changes at the quantum's end).
  void note_ring_command(uint32_t ring, bool put, int words) {
    if (ring >= q_ring_delta_.size() || !rings_[ring].configured) return;  // faults at apply
    int32_t& d = q_ring_delta_[ring];
    q_ring_dirty_ = true;
    if (put) d += words;
    else if (static_cast<int64_t>(rings_[ring].count) + d >= words) d -= words;  // else: zeros
  }

  // register file index of relative register i of context ci
  static size_t phys(const ME& m, int ci, int i) { return static_cast<size_t>(ci * m.per_ctx + i); }

 private:
  friend struct Dispatch;
  friend struct ChipSnapshot;
  // Every member below is either simulated state, which NPKIT_CHIP_VALUE_STATE (after the
  // class) or snapshot.cpp copies, or configuration/observation: a new member goes in one
  // of the two.
  template <bool kDebug> inline void run_me(ME& m);
  void run_me_debug(ME& m);  // run_me<true> and its stop, out of line
  // the debug-mode instruction hooks (run_me<true>): before an instruction at pc -- true
  // when a breakpoint stops the run there; after one retired -- records stops, counts
  bool debug_before(const ME& m, int ci, uint32_t pc, uint64_t done);
  void debug_after(ME& m, int ci, uint32_t pc, const Insn& in, uint64_t done);
  void debug_stop(const char* why, const ME& m, int ci, uint32_t pc);
  bool debug_watch_changed(int w);
  // lockstep.cpp: before / after an instruction of the lockstep ME, a delivery to it
  void lockstep_before(const ME& m, int ci, uint32_t pc);
  void lockstep_after(ME& m, int ci, uint32_t pc);
  void lockstep_delivered(const Event& ev, const ME& m);
  template <bool kDebug> inline void run_burst(ME& m, uint64_t end, uint64_t limit);
  // run() without (kDebug false) or with the debugger's hooks
  template <bool kDebug> std::string run_loop(uint64_t max_cycles, int64_t stop_tx_frames, bool until_idle);
  void step_swap(ME& m, Context& c, int ci, uint8_t mode);
  inline void set_state(ME& m, int ci, CtxState s, uint64_t t);
  inline void set_state_from_executing(ME& m, int ci, CtxState s);
  inline void set_state_ready_to_executing(ME& m, int ci);
  inline bool pick_context(ME& m);
  template <bool kDebug> void process_events_until(uint64_t t);
  void deliver(const Event& ev);
  inline bool wake_check(ME& m, int ci, uint64_t t);  // true: the context became Ready
  void wake(ME& m, int ci, uint64_t t);  // wake_check's wake-up: its wait is satisfied
  [[noreturn]] void deadlock(const char* why);
  bool waiting_on_media_only() const;
  uint32_t sram_word_addr(uint32_t addr, int& ch) const;

  ChipConfig cfg_;
  std::vector<ME> mes_;
  std::vector<ME*> loaded_;  // MEs with an image, in index order: the only ones that can run
  // Scheduler keys, parallel to loaded_: the ME's local time when it can run (not stalled on
  // its command FIFO, a context executing or Ready), else none.  Only run_me (for the ME it
  // ran) and deliver (for the ME it hit) change what a key depends on, so they refresh it;
  // run() refreshes all on entry.  The run queue keeps their minimum.
  RunQueue runq_;
  std::vector<int> loaded_pos_;  // per ME index: position in loaded_, -1 when not loaded
  // An ME's time only jumps to an event's time (checked by post and by run on entry against
  // RunQueue::kMaxTime); between events it moves by bursts, which cannot get from there past
  // the key width in any feasible run.
  void refresh_key(const ME& m) {
    int p = loaded_pos_[m.index];
    if (p >= 0) {
      const bool can = !m.fifo_stalled && (m.cur >= 0 || m.ready_mask != 0);
      runq_.set(static_cast<size_t>(p), can ? RunQueue::pack(m.time, p) : RunQueue::kNone);
    }
  }
  std::vector<Memory<uint32_t>> sram_mem_;
  Memory<uint8_t> dram_mem_;
  Memory<uint32_t> scratch_mem_;
  std::vector<Unit> sram_, dram_;
  Unit scratch_unit_, hash_unit_, msf_unit_;
  std::vector<Ring> rings_;
  std::vector<std::vector<QueueDesc>> queues_;
  EventQueue events_;                  // (time, seq, slot) of the pending events
  std::vector<Event> event_pool_;      // payloads, indexed by slot
  std::vector<uint32_t> event_free_;   // free pool slots
  uint64_t next_event_time() const { return events_.top_time(); }
  uint64_t seq_ = 0;
  std::unique_ptr<Media> media_;
  // receive threads registered on the MSF freelists: (me, ctx, sig) -> waiting for media
  std::vector<std::array<uint16_t, 8>> media_sigs_;
  uint64_t now_ = 0;
  // The running burst ends before burst_end_ (the schedule's choice; commands shorten it)
  // and is cut before burst_stop_ = min(burst_end_, the run's limit).  A burst the limit
  // cut is finished first thing in the next run (cut_me_ >= 0, up to cut_end_), so where
  // runs end never changes the schedule (docs/sim-core.md, "Time and scheduling").
  uint64_t burst_end_ = 0;
  uint64_t burst_stop_ = 0;
  int cut_me_ = -1;
  uint64_t cut_end_ = 0;
  uint64_t retired_ = 0;
  uint64_t last_progress_time_ = 0;
  uint64_t last_progress_retired_ = 0;
  bool tracing_ = false;
  std::vector<TraceInterval> trace_;
  DebugHooks debug_;          // debugger hooks: observation/control, not state
  std::unique_ptr<FrameLog> frame_log_;
  // Trace points: (me << 32 | pc) -> the instruction's own handler.  Entries stay until the
  // ME is loaded again, so a snapshot taken with trace points set restores safely.
  std::unordered_map<uint64_t, uint16_t> trace_originals_;
  void clear_trace_points();
  // the quantum schedule: the setting, and the state of the quantum being run (empty
  // between runs; q_next_, where the next quantum starts, is simulated state)
  bool quantum_ = false;
  uint64_t quantum_cycles_ = 1;
  uint64_t q_next_ = 0;
  uint64_t q_end_ = 0;
  bool q_active_ = false;   // a quantum is being run: posts before q_end_ are routed
  int q_me_ = -1;           // the ME running inside it, -1 outside the MEs' phase
  std::vector<std::vector<uint32_t>> q_events_;  // per ME: the quantum's events (slots)
  std::vector<PendingCmd> pending_;               // commands issued in the quantum
  size_t pending_used_ = 0;                       // ... the first pending_used_ slots
  std::vector<int32_t> q_ring_delta_;  // per scratch ring: the running ME's puts - gets
  bool q_ring_dirty_ = false;          // q_ring_delta_ holds a non-zero entry (cleared lazily)
  // bit i: ME i has an image and can run (not stalled on its command FIFO, a context
  // executing or Ready).  Set for every ME at run_quantum's entry (the host may have changed
  // MEs between runs) and after each ME's turn: only the ME's own turn changes what the bit
  // depends on (its events, instructions and same-ME signals; an event for another ME is
  // held to the quantum's end and makes that ME visited in a later quantum), so an ME whose
  // bit is clear and which has no event in the quantum would do nothing in its turn and is
  // passed over.  Derived state (recomputed at each run's entry), not part of a snapshot.
  uint64_t q_run_mask_ = 0;
  static bool can_run(const ME& m) {
    return m.contexts != 0 && !m.fifo_stalled && (m.cur >= 0 || m.ready_mask != 0);
  }
  // next-neighbour writes of the running ME (to ME + 1), applied at the ME's phase end
  // into a per-quantum list the neighbour sees from the next quantum on
  struct NnWrite {
    uint32_t idx;    // register (not ring)
    uint32_t value;
    bool ring;       // a put on the NN ring
  };
  std::vector<NnWrite> q_nn_log_;
  uint32_t q_nn_puts_ = 0;
  struct NnPending {
    int16_t me;      // the ME written to
    NnWrite w;
  };
  std::vector<NnPending> q_nn_pending_;
  std::vector<std::pair<uint64_t, uint32_t>> pending_order_;
  std::string run_quantum(uint64_t max_cycles, int64_t stop_tx_frames, bool until_idle);
  void run_one_quantum(uint64_t start, uint64_t end);
  void run_quantum_me(ME& m, uint64_t end);
  bool post_in_quantum(uint32_t slot);
  void reset_quantum_state();

 public:
  uint16_t trace_original(int me, uint32_t pc) const {
    auto it = trace_originals_.find((static_cast<uint64_t>(me) << 32) | pc);
    return it == trace_originals_.end() ? H_OFF_END : it->second;
  }

 private:
#ifdef NPKIT_BURST_STATS
  BurstStats stats_;  // observation, not simulated state
  void note_burst(const ME& m, uint64_t start, uint64_t end, uint64_t limit);
#endif

 public:
  // memory helpers shared by the memory commands
  uint32_t& sram_word(uint32_t addr);   // faults on a bad address
  uint32_t& scratch_word(uint32_t addr);
  void check_dram(uint64_t addr, uint64_t bytes) const;
  uint8_t* dram_bytes() { return dram_mem_.get(); }
  Unit& sram_unit(uint32_t addr) { return sram_[(addr >> 26) & 3]; }
  Unit& dram_unit(uint64_t addr) { return dram_[(addr / cfg_.dram_interleave_bytes) % dram_.size()]; }
  Unit& scratch_u() { return scratch_unit_; }
  Unit& hash_u() { return hash_unit_; }
  Unit& msf_u() { return msf_unit_; }
  std::vector<QueueDesc>& queues_of(int ch) { return queues_[ch]; }
  std::vector<Ring>& rings_mut() { return rings_; }
  void note_media_registration(int me, int ctx, uint32_t value);
  void q_enqueue(int ch, uint32_t q, uint32_t handle);   // faults (LocalFault) on bad handles
  uint32_t q_dequeue(int ch, uint32_t q);
  Media& media_ref() { return *media_; }
};

// ------------------------------------------------------------------ snapshots
// The members of Chip a snapshot copies as values.  Not here: cfg_ (fixed at construction),
// loaded_ (pointers into mes_, rebuilt from loaded_pos_), the memories and the media model
// (held as MemoryImages and a Media copy), tracing_, trace_ and frame_log_ (observation),
// debug_ (the debugger's hooks).
#define NPKIT_CHIP_VALUE_STATE(X)                                                          \
  X(mes_) X(runq_) X(loaded_pos_) X(sram_) X(dram_) X(scratch_unit_)      \
  X(hash_unit_) X(msf_unit_) X(rings_) X(queues_) X(events_) X(event_pool_) X(event_free_) \
  X(seq_) X(media_sigs_) X(now_) X(burst_end_) X(burst_stop_) X(cut_me_) X(cut_end_)       \
  X(retired_) X(last_progress_time_) X(last_progress_retired_) X(q_next_)

// An immutable copy of a chip's simulated state (Chip::snapshot).
struct ChipSnapshot {
  const Chip* owner = nullptr;
#define NPKIT_SNAPSHOT_FIELD(member) decltype(Chip::member) member;
  NPKIT_CHIP_VALUE_STATE(NPKIT_SNAPSHOT_FIELD)
#undef NPKIT_SNAPSHOT_FIELD
  std::vector<std::shared_ptr<const MemoryImage>> sram_mem;
  std::shared_ptr<const MemoryImage> dram_mem, scratch_mem;
  std::unique_ptr<Media> media;
  // host bytes the snapshot holds beyond the chip itself (images' pages, copies)
  size_t held_bytes() const;
};

// State changes are on the hot path (every swap, wake-up and pick): inline.
[[gnu::always_inline]] inline void Chip::set_state(ME& m, int ci, CtxState s, uint64_t t) {
  Context& c = m.ctx[ci];
  if (t < c.state_since) t = c.state_since;
  c.state_cycles[static_cast<int>(c.state)] += t - c.state_since;
  if (tracing_ && t > c.state_since)
    trace_.push_back(TraceInterval{m.index, ci, c.state, c.state_since, t});
  if (c.state == CtxState::Ready) m.ready_mask &= ~(1u << ci);
  if (s == CtxState::Ready) m.ready_mask |= 1u << ci;
  c.state = s;
  c.state_since = t;
}

// set_state(m, ci, Executing, m.time) for a Ready context (pick_context: the arbiter picks
// from ready_mask, whose bit ci is set exactly while context ci is Ready), without the
// general form's tests of the old and new state.
[[gnu::always_inline]] inline void Chip::set_state_ready_to_executing(ME& m, int ci) {
  Context& c = m.ctx[ci];
  uint64_t t = m.time;
  if (t < c.state_since) t = c.state_since;
  c.state_cycles[static_cast<int>(CtxState::Ready)] += t - c.state_since;
  if (tracing_ && t > c.state_since)
    trace_.push_back(TraceInterval{m.index, ci, CtxState::Ready, c.state_since, t});
  m.ready_mask &= ~(1u << ci);
  c.state = CtxState::Executing;
  c.state_since = t;
}

// set_state(m, ci, s, m.time) for the executing context (step_swap): its state is
// Executing, not Ready, since m.time (the pick's time, which m.time never goes below), so
// neither test of the general form is needed.
[[gnu::always_inline]] inline void Chip::set_state_from_executing(ME& m, int ci, CtxState s) {
  Context& c = m.ctx[ci];
  const uint64_t t = m.time;
  c.state_cycles[static_cast<int>(CtxState::Executing)] += t - c.state_since;
  if (tracing_ && t > c.state_since)
    trace_.push_back(TraceInterval{m.index, ci, CtxState::Executing, c.state_since, t});
  if (s == CtxState::Ready) m.ready_mask |= 1u << ci;
  c.state = s;
  c.state_since = t;
}

// ------------------------------------------------------------------ instruction semantics
// Each returns the outcome; `ci` is the context index.  Files: alu.cpp, branch.cpp,
// ctx.cpp, units.cpp (cam, crc, mul_step), memory.cpp.
using Handler = Outcome (*)(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_alu(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_dbl_shf(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_immed(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_ld_field(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_byte_align(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_bitop(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_mul_step(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br_ctx(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br_bit(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br_byte(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br_signal(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_br_inp_state(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_jump(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_ctx_arb(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_local_csr(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_same_me_signal(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_cam(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_crc(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_hash(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_sram(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_scratch(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_dram(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_msf(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_nop(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_off_end(Chip&, ME&, Context&, int, const Insn&);
Outcome exec_trace_point(Chip&, ME&, Context&, int, const Insn&);  // frame_log.cpp
Handler handler_at(uint16_t index);  // the dispatch table's entry (chip.cpp)

// CRC and hash functions (units.cpp), shared with nothing else but named for tests/docs.
uint32_t crc_update(uint32_t kind, uint32_t remainder, uint8_t byte);
void hash_key(const HashConfig& cfg, int size, uint32_t* words);

// decode.cpp
Insn predecode(uint64_t word, int me, uint32_t pc, int per_ctx, const ChipConfig& cfg);

}  // namespace npkit
