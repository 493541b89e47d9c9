// The chip: construction, image loading, register access for tests, events, the
// per-ME dispatch loop and the scheduler that interleaves the MEs in time order.
#include "chip.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <sstream>

#define NPKIT_OPERANDS_SLOW_PATH
#include "alu_fast.hpp"
#include "operands.hpp"

namespace npkit {

void fault(const char* kind, const std::string& msg) { throw LocalFault(kind, msg); }

const char* ctx_state_name(CtxState s) {
  switch (s) {
    case CtxState::Inactive: return "inactive";
    case CtxState::Ready: return "ready";
    case CtxState::Executing: return "executing";
    case CtxState::Sleeping: return "sleeping";
  }
  return "?";
}

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kFp = 1ULL << 16;  // fixed point for fractional channel occupancy

uint64_t occupancy_fp(uint32_t nbytes, double bytes_per_cycle) {
  double cycles = static_cast<double>(nbytes) / bytes_per_cycle;
  return static_cast<uint64_t>(cycles * static_cast<double>(kFp) + 0.5);
}

// The handler table: index = major opcode (from the generated header), plus H_OFF_END.
// An opcode without a handler here is rejected by predecode, so it is never dispatched.
constexpr std::array<Handler, kHandlerCount> make_handlers() {
  std::array<Handler, kHandlerCount> t{};
  t[isa::OP_ALU] = exec_alu;
  t[isa::OP_DBL_SHF] = exec_dbl_shf;
  t[isa::OP_IMMED] = exec_immed;
  t[isa::OP_LD_FIELD] = exec_ld_field;
  t[isa::OP_BYTE_ALIGN] = exec_byte_align;
  t[isa::OP_BITOP] = exec_bitop;
  t[isa::OP_MUL_STEP] = exec_mul_step;
  t[isa::OP_BR] = exec_br;
  t[isa::OP_BR_CTX] = exec_br_ctx;
  t[isa::OP_BR_BIT] = exec_br_bit;
  t[isa::OP_BR_BYTE] = exec_br_byte;
  t[isa::OP_BR_SIGNAL] = exec_br_signal;
  t[isa::OP_BR_INP_STATE] = exec_br_inp_state;
  t[isa::OP_JUMP] = exec_jump;
  t[isa::OP_CTX_ARB] = exec_ctx_arb;
  t[isa::OP_LOCAL_CSR] = exec_local_csr;
  t[isa::OP_CAM] = exec_cam;
  t[isa::OP_CRC] = exec_crc;
  t[isa::OP_HASH] = exec_hash;
  t[isa::OP_SRAM] = exec_sram;
  t[isa::OP_SCRATCH] = exec_scratch;
  t[isa::OP_DRAM] = exec_dram;
  t[isa::OP_MSF] = exec_msf;
  t[isa::OP_NOP] = exec_nop;
  t[H_OFF_END] = exec_off_end;
  t[H_TRACE_POINT] = exec_trace_point;
  for (int k = 0; k < kAluFastCount; ++k) t[H_ALU_FAST + k] = alu::kFastHandlers[k];
  for (size_t k = 0; k < isa::alu_ops::COUNT; ++k) t[H_ALU_LM + k] = alu::kLmHandlers[k];
  t[H_SAME_ME_SIGNAL] = exec_same_me_signal;
  return t;
}
constexpr auto kHandlers = make_handlers();

}  // namespace

Handler handler_at(uint16_t index) { return kHandlers[index]; }

// ------------------------------------------------------------------ units
uint64_t Unit::schedule(uint64_t t, uint32_t nbytes, bool write) {
  uint32_t charged = std::max(nbytes, cfg.min_access_bytes);
  return schedule_fp(t, occupancy_fp(charged, write ? cfg.write_bytes_per_cycle : cfg.read_bytes_per_cycle), nbytes);
}

uint64_t Unit::schedule_cycles(uint64_t t, uint64_t cycles, uint32_t nbytes) {
  return schedule_fp(t, cycles * kFp, nbytes);
}

uint64_t Unit::schedule_fp(uint64_t t, uint64_t occ_fp, uint32_t nbytes) {
  uint64_t start = std::max(t * kFp, free_at_fp);
  free_at_fp = start + occ_fp;
  commands++;
  bytes += nbytes;
  busy_fp += occ_fp;
  uint64_t done = (free_at_fp + kFp - 1) / kFp + cfg.latency;
  return std::max(done, t + 1);
}

double Unit::busy_cycles() const { return static_cast<double>(busy_fp) / static_cast<double>(kFp); }

// ------------------------------------------------------------------ construction
bool ME::has_ready() const { return ready_mask != 0; }

Chip::Chip(ChipConfig cfg, uint64_t seed) : cfg_(std::move(cfg)) {
  uint64_t s = seed;
  mes_.resize(cfg_.num_mes());
  for (int i = 0; i < cfg_.num_mes(); ++i) {
    ME& m = mes_[i];
    m.index = i;
    m.number = cfg_.me_numbers[i];
    m.code.assign(cfg_.control_store_words + 1, Insn{});
    m.file_at = reg_layout(cfg_);
    m.regs.assign(m.file_at[kRegFiles], 0);
    m.nn.assign(cfg_.nn_registers, 0);
    m.lm.allocate(cfg_.local_memory_words);
    m.cam.assign(cfg_.cam_entries, ME::CamEntry{});
    for (int e = 0; e < cfg_.cam_entries; ++e) m.cam_lru.push_back(static_cast<uint8_t>(e));
    m.prng = splitmix64(s);
  }
  sram_mem_.resize(cfg_.sram_channels);
  for (auto& mem : sram_mem_) mem.allocate(cfg_.sram_channel_bytes / 4);
  dram_mem_.allocate(cfg_.dram_bytes);
  scratch_mem_.allocate(cfg_.scratch_bytes / 4);
  for (int i = 0; i < cfg_.sram_channels; ++i) sram_.push_back(Unit{"sram" + std::to_string(i), cfg_.sram});
  for (int i = 0; i < cfg_.dram_channels; ++i) dram_.push_back(Unit{"dram" + std::to_string(i), cfg_.dram});
  scratch_unit_ = Unit{"scratch", cfg_.scratch};
  hash_unit_ = Unit{"hash", ChannelConfig{cfg_.hash.latency, 1, 1, 0}};
  msf_unit_ = Unit{"msf", ChannelConfig{cfg_.msf_csr_latency, 1e9, 1e9, 0}};
  rings_.assign(cfg_.rings, Ring{});
  queues_.assign(cfg_.sram_channels, std::vector<QueueDesc>(cfg_.queue_descriptors));
  media_sigs_.assign(cfg_.num_mes(), std::array<uint16_t, 8>{});
  loaded_pos_.assign(cfg_.num_mes(), -1);
  media_ = std::make_unique<Media>(cfg_.media, *this);
}

Chip::~Chip() = default;

const ME& Chip::me(int i) const {
  if (i < 0 || i >= static_cast<int>(mes_.size()))
    throw std::out_of_range("ME index " + std::to_string(i) + " is out of range 0.." +
                            std::to_string(mes_.size() - 1));
  return mes_[i];
}

void Chip::load(int me_index, const std::vector<uint64_t>& words, int ctx_mode) {
  me(me_index);  // range check
  if (ctx_mode != 4 && ctx_mode != 8)
    throw std::invalid_argument("ctx_mode must be 4 or 8, got " + std::to_string(ctx_mode));
  ME& m = mes_[me_index];
  if (words.size() > cfg_.control_store_words)
    throw SimError("control_store_overflow", me_index, -1, static_cast<int64_t>(cfg_.control_store_words),
                   "image of " + std::to_string(words.size()) + " words does not fit the control store of " +
                   std::to_string(cfg_.control_store_words) + " words");
  int per_ctx = std::min({cfg_.gprs_per_bank, cfg_.xfer_per_kind, cfg_.nn_registers}) / ctx_mode;
  std::vector<Insn> code(cfg_.control_store_words + 1, Insn{});
  for (size_t pc = 0; pc < words.size(); ++pc) {
    try {
      code[pc] = predecode(words[pc], me_index, static_cast<uint32_t>(pc), per_ctx, cfg_);
    } catch (const LocalFault& f) {
      throw SimError(f.kind, me_index, -1, static_cast<int64_t>(pc), f.what());
    }
  }
  m.code = std::move(code);
  m.image_words = static_cast<uint32_t>(words.size());
  m.contexts = ctx_mode;
  m.per_ctx = per_ctx;
  if (std::find(loaded_.begin(), loaded_.end(), &m) == loaded_.end()) {
    loaded_.push_back(&m);
    std::sort(loaded_.begin(), loaded_.end(), [](const ME* x, const ME* y) { return x->index < y->index; });
    runq_.reset(loaded_.size());
    for (size_t k = 0; k < loaded_.size(); ++k) loaded_pos_[loaded_[k]->index] = static_cast<int>(k);
  }
  std::fill(m.regs.begin(), m.regs.end(), 0);
  std::fill(m.nn.begin(), m.nn.end(), 0);
  if (cut_me_ == me_index) cut_me_ = -1;  // a new image: the cut burst is void
  m.cur = -1;
  m.last = ctx_mode - 1;
  m.ready_mask = 0;
  m.fifo_stalled = false;
  m.time = std::max(m.time, now_);
  for (int ci = 0; ci < 8; ++ci) {
    Context fresh;
    fresh.state_since = m.time;
    m.ctx[ci] = fresh;
    if (ci < ctx_mode) {
      m.ctx[ci].enabled = true;
      set_state(m, ci, CtxState::Ready, m.time);
    }
  }
}

// ------------------------------------------------------------------ register access (tests)
namespace {
Opnd opnd_for_test(const ME& m, uint32_t code) {
  auto rel = [&](OpKind k, uint32_t first) {
    uint32_t i = code - first;
    if (static_cast<int>(i) >= m.per_ctx) throw std::out_of_range("register index " + std::to_string(i) + " out of range");
    return Opnd{k, static_cast<uint8_t>(i)};
  };
  using namespace isa;
  if (code < OPND_GPR_A_FIRST + OPND_GPR_A_COUNT) return rel(OpKind::GprA, OPND_GPR_A_FIRST);
  if (code >= OPND_GPR_B_FIRST && code < OPND_GPR_B_FIRST + OPND_GPR_B_COUNT) return rel(OpKind::GprB, OPND_GPR_B_FIRST);
  if (code >= OPND_XFER_S_FIRST && code < OPND_XFER_S_FIRST + OPND_XFER_S_COUNT) return rel(OpKind::XferS, OPND_XFER_S_FIRST);
  if (code >= OPND_XFER_D_FIRST && code < OPND_XFER_D_FIRST + OPND_XFER_D_COUNT) return rel(OpKind::XferD, OPND_XFER_D_FIRST);
  if (code >= OPND_NN_FIRST && code < OPND_NN_FIRST + OPND_NN_COUNT) return rel(OpKind::Nn, OPND_NN_FIRST);
  throw std::invalid_argument("read_reg/write_reg take GPR, transfer or NN operand codes, got " + std::to_string(code));
}
}  // namespace

uint32_t Chip::read_reg(int me_index, int ci, uint32_t code) {
  me(me_index);
  ME& m = mes_[me_index];
  if (ci < 0 || ci >= 8) throw std::out_of_range("context out of range");
  Opnd o = opnd_for_test(m, code);
  return read(m, m.ctx[ci], ci, o);
}

void Chip::write_reg(int me_index, int ci, uint32_t code, uint32_t value) {
  me(me_index);
  ME& m = mes_[me_index];
  if (ci < 0 || ci >= 8) throw std::out_of_range("context out of range");
  Opnd o = opnd_for_test(m, code);
  size_t p = phys(m, ci, o.idx);
  switch (o.kind) {  // transfer registers: the *in* register, so that tests can feed reads
    case OpKind::GprA: m.gpr_a()[p] = value; break;
    case OpKind::GprB: m.gpr_b()[p] = value; break;
    case OpKind::XferS: m.sram_in()[p] = value; break;
    case OpKind::XferD: m.dram_in()[p] = value; break;
    default: m.nn[p] = value; break;  // this ME's NN register (what n$ reads)
  }
}

uint32_t Chip::read_xfer_out(int me_index, int ci, int kind, int index) {
  me(me_index);
  ME& m = mes_[me_index];
  if (ci < 0 || ci >= 8 || index < 0 || index >= m.per_ctx) throw std::out_of_range("transfer register out of range");
  size_t p = phys(m, ci, index);
  if (kind == 0) return m.sram_out()[p];
  if (kind == 1) return m.dram_out()[p];
  throw std::invalid_argument("kind is 0 ($ SRAM) or 1 ($$ DRAM)");
}

// ------------------------------------------------------------------ memories
uint32_t* Chip::sram_data(int ch, size_t& words) {
  if (ch < 0 || ch >= cfg_.sram_channels) throw std::out_of_range("SRAM channel " + std::to_string(ch) + " out of range");
  words = sram_mem_[ch].size;
  return sram_mem_[ch].get();
}
uint8_t* Chip::dram_data(size_t& bytes) { bytes = dram_mem_.size; return dram_mem_.get(); }
uint32_t* Chip::scratch_data(size_t& words) { words = scratch_mem_.size; return scratch_mem_.get(); }
uint32_t* Chip::lm_data(int me_index, size_t& words) {
  me(me_index);
  words = mes_[me_index].lm.size;
  return mes_[me_index].lm.get();
}

uint32_t& Chip::sram_word(uint32_t addr) {
  uint32_t ch = (addr >> 26) & 3;
  uint32_t off = addr & ((1u << 26) - 1);
  if ((addr >> 28) || ch >= static_cast<uint32_t>(cfg_.sram_channels) || off + 4 > cfg_.sram_channel_bytes || (addr & 3))
    fault("bad_address", "SRAM address " + std::to_string(addr) + " is outside SRAM or not longword aligned");
  return sram_mem_[ch][off >> 2];
}

uint32_t& Chip::scratch_word(uint32_t addr) {
  if (addr + 4ULL > cfg_.scratch_bytes || (addr & 3))
    fault("bad_address", "scratch address " + std::to_string(addr) + " is outside scratch or not longword aligned");
  return scratch_mem_[addr >> 2];
}

void Chip::check_dram(uint64_t addr, uint64_t nbytes) const {
  if (addr + nbytes > cfg_.dram_bytes || (addr & 7))
    fault("bad_address", "DRAM address " + std::to_string(addr) + " (+" + std::to_string(nbytes) +
          " bytes) is outside DRAM or not quadword aligned");
}

// ------------------------------------------------------------------ rings and queues (host side)
void Chip::configure_ring(int r, uint32_t base_word, uint32_t size_words) {
  if (r < 0 || r >= cfg_.rings) throw std::out_of_range("ring " + std::to_string(r) + " out of range");
  if (size_words < cfg_.ring_min_words || size_words > cfg_.ring_max_words || (size_words & (size_words - 1)))
    throw std::invalid_argument("ring size must be a power of two in " + std::to_string(cfg_.ring_min_words) +
                                ".." + std::to_string(cfg_.ring_max_words) + " words, got " + std::to_string(size_words));
  if ((static_cast<uint64_t>(base_word) + size_words) * 4 > cfg_.scratch_bytes)
    throw std::invalid_argument("ring does not fit in scratch memory");
  Ring fresh;
  fresh.configured = true;
  fresh.base = base_word;
  fresh.size = size_words;
  rings_[r] = fresh;
}

const Ring& Chip::ring(int r) const {
  if (r < 0 || r >= cfg_.rings) throw std::out_of_range("ring " + std::to_string(r) + " out of range");
  return rings_[r];
}

void Chip::ring_put(int r, const std::vector<uint32_t>& words) {
  if (r < 0 || r >= cfg_.rings) throw std::out_of_range("ring " + std::to_string(r) + " out of range");
  Ring& g = rings_[r];
  if (!g.configured) throw std::invalid_argument("scratch ring " + std::to_string(r) + " is not configured");
  if (g.size - g.count < words.size())
    throw std::overflow_error("put of " + std::to_string(words.size()) + " words to scratch ring " +
                              std::to_string(r) + " holding " + std::to_string(g.count) + " of " +
                              std::to_string(g.size));
  for (uint32_t w : words) {
    scratch_word(4 * (g.base + g.tail)) = w;
    g.tail = (g.tail + 1) % g.size;
  }
  g.count += static_cast<uint32_t>(words.size());
  g.high_water = std::max(g.high_water, g.count);
  g.puts++;
}

std::vector<uint32_t> Chip::ring_get(int r, uint32_t count) {
  if (r < 0 || r >= cfg_.rings) throw std::out_of_range("ring " + std::to_string(r) + " out of range");
  Ring& g = rings_[r];
  if (!g.configured) throw std::invalid_argument("scratch ring " + std::to_string(r) + " is not configured");
  std::vector<uint32_t> out;
  if (g.count < count) return out;
  out.reserve(count);
  for (uint32_t k = 0; k < count; ++k) {
    out.push_back(scratch_word(4 * (g.base + g.head)));
    g.head = (g.head + 1) % g.size;
  }
  g.count -= count;
  g.gets++;
  return out;
}

// Under the quantum schedule an ME's status test also counts its own puts and gets of the
// quantum, which reach the ring at the quantum's end.
bool Chip::scratch_ring_full(int r) const {
  const Ring& g = rings_[r];
  const int64_t count = static_cast<int64_t>(g.count) + (q_me_ >= 0 ? q_ring_delta_[r] : 0);
  return g.configured && static_cast<int64_t>(g.size) - count < 16;  // a 16-word put might not fit
}
bool Chip::scratch_ring_empty(int r) const {
  return static_cast<int64_t>(rings_[r].count) + (q_me_ >= 0 ? q_ring_delta_[r] : 0) == 0;
}

namespace {
void check_queue(const ChipConfig& cfg, int ch, uint32_t q) {
  if (ch < 0 || ch >= cfg.sram_channels) throw std::out_of_range("SRAM channel " + std::to_string(ch) + " out of range");
  if (q >= cfg.queue_descriptors) throw std::out_of_range("queue " + std::to_string(q) + " out of range");
}
}  // namespace

void Chip::enqueue(int ch, uint32_t q, uint32_t handle) {
  check_queue(cfg_, ch, q);
  try {
    q_enqueue(ch, q, handle);
  } catch (const LocalFault& f) {
    throw std::invalid_argument(f.what());
  }
}

uint32_t Chip::dequeue(int ch, uint32_t q) {
  check_queue(cfg_, ch, q);
  try {
    return q_dequeue(ch, q);
  } catch (const LocalFault& f) {
    throw std::invalid_argument(f.what());
  }
}

const QueueDesc& Chip::queue(int ch, uint32_t q) const {
  check_queue(cfg_, ch, q);
  return queues_[ch][q];
}

void Chip::q_enqueue(int ch, uint32_t q, uint32_t handle) {
  if (handle == 0) fault("bad_command", "buffer handle 0 cannot be enqueued (0 means empty)");
  QueueDesc& d = queues_[ch][q];
  sram_word(handle) = 0;  // word 0 of the descriptor is the link
  if (d.count == 0) d.head = handle;
  else sram_word(d.tail) = handle;
  d.tail = handle;
  d.count++;
}

uint32_t Chip::q_dequeue(int ch, uint32_t q) {
  QueueDesc& d = queues_[ch][q];
  if (d.count == 0) return 0;
  uint32_t h = d.head;
  d.head = sram_word(h);
  if (--d.count == 0) d.head = d.tail = 0;
  return h;
}

// ------------------------------------------------------------------ media host side
void Chip::add_rx_frame(int port, std::vector<uint8_t> bytes, int64_t not_before) {
  media_->add_rx_frame(port, std::move(bytes), not_before);
}

void Chip::autopush(int me_index, int ci, int xfer, const uint32_t* words, int n, int sig, uint64_t when) {
  if (me_index < 0 || me_index >= static_cast<int>(mes_.size()) || ci < 0 || ci >= 8 || n < 0 || n > 32)
    return;  // the media model validated the registration; ignore nonsense defensively
  Event ev;
  ev.time = when;
  ev.me = static_cast<int16_t>(me_index);
  ev.ctx = static_cast<int8_t>(ci);
  ev.sig = static_cast<int8_t>(sig);
  ev.file = 0;
  ev.xfer = static_cast<uint8_t>(xfer);
  ev.nwords = static_cast<uint8_t>(n);
  ev.counts = false;
  std::copy(words, words + n, ev.words.begin());
  if (sig > 0 && sig < 16) media_sigs_[me_index][ci] &= static_cast<uint16_t>(~(1u << sig));
  post(ev);
}

void Chip::note_media_registration(int me_index, int ci, uint32_t value) {
  uint32_t sig = (value >> 8) & 0xF;
  if (sig) media_sigs_[me_index][ci] |= static_cast<uint16_t>(1u << sig);
  if (frame_log_) [[unlikely]] frame_log_->media_registration(me_index, ci, static_cast<int>(sig));
}

// ------------------------------------------------------------------ events and signals
// The latest event time (and ME time at a run's start) accepted: half the run queue's key
// range, so that bursts after it stay far inside the range (docs/sim-core.md).
constexpr uint64_t kLatestEvent = RunQueue::kMaxTime / 2;

void Chip::post(const Event& ev) {
  uint32_t slot;
  if (event_free_.empty()) {
    slot = static_cast<uint32_t>(event_pool_.size());
    event_pool_.emplace_back();
  } else {
    slot = event_free_.back();
    event_free_.pop_back();
  }
  Event& e = event_pool_[slot];
  e.time = ev.time;
  e.seq = seq_;
  e.me = ev.me;
  e.ctx = ev.ctx;
  e.sig = ev.sig;
  e.file = ev.file;
  e.xfer = ev.xfer;
  e.nwords = ev.nwords;
  e.counts = ev.counts;
  // in blocks of 4 words (a fixed-size copy, no call to memmove; the words past nwords
  // are never read)
  for (int k = 0; k < ev.nwords; k += 4) std::memcpy(&e.words[k], &ev.words[k], 4 * sizeof(uint32_t));
  if (ev.time > kLatestEvent) [[unlikely]] fault("time_limit", "an event beyond 2^57 cycles");
  if (q_active_ && ev.time < q_end_) [[unlikely]] {  // inside the quantum being run
    if (post_in_quantum(slot)) return;
  }
  shorten_burst(e.time);
  events_.push(e.time, seq_++, slot);
}

void Chip::raise_signal(int me_index, int ci, int sig, uint64_t when) {
  if (me_index == q_me_ && when < q_end_) {  // inside the quantum, for the ME running now
    ME& m = mes_[me_index];
    if (when == m.time + 1 && m.cur >= 0) {
      // A same-ME signal (local_csr SAME_ME_SIGNAL) due after the issuing instruction:
      // delivered now, with no event, instead of ending the burst there.  The same
      // result: every other event of this ME is due at or after `when` (the burst runs
      // only up to the next), deliveries at one cycle commute (signal bits are ORed; a
      // wake-up sets a Ready bit and its time, max(when, m.time) = when either way), and
      // nothing reads another context's signals or state before the next instruction, at
      // `when`.  The seq number is still taken, so later events keep theirs.
      seq_++;
      if (sig > 0) {
        m.ctx[ci].signals |= static_cast<uint16_t>(1u << sig);
        wake_check(m, ci, when);
      }
      return;
    }
  }
  Event ev;
  ev.time = when;
  ev.me = static_cast<int16_t>(me_index);
  ev.ctx = static_cast<int8_t>(ci);
  ev.sig = static_cast<int8_t>(sig);
  ev.nwords = 0;
  ev.counts = false;
  post(ev);
}

// raise_signal for a SAME_ME_SIGNAL of the running ME (H_SAME_ME_SIGNAL): its at-issue case
// without the call's tests of the ME (under the quantum schedule q_me_ is the running ME,
// whose context executes), else the event as before.
void Chip::same_me_signal(ME& m, uint32_t v) {
  const int ci = static_cast<int>(v & 7), sig = static_cast<int>((v >> 3) & 0xF);
  const uint64_t when = m.time + 1;
  if (q_me_ >= 0 && when < q_end_) {  // raise_signal's same-ME case, argued there
    seq_++;
    if (sig > 0) {
      m.ctx[ci].signals |= static_cast<uint16_t>(1u << sig);
      wake_check(m, ci, when);
    }
    return;
  }
  raise_signal(m.index, ci, sig, when);
}

// The test inline, the wake-up out of line: most calls (a signal for a context that is
// running or still waits for more) return false, and the wake-up's body (set_state) made
// every call pay for saving and restoring registers.
inline bool Chip::wake_check(ME& m, int ci, uint64_t t) {
  const Context& c = m.ctx[ci];
  if (c.state != CtxState::Sleeping) return false;
  const uint16_t got = c.signals & c.wait_mask;
  if (!(c.wait_any ? got != 0 : got == c.wait_mask)) return false;
  wake(m, ci, t);
  return true;
}

[[gnu::noinline]] void Chip::wake(ME& m, int ci, uint64_t t) {
  Context& c = m.ctx[ci];
  const uint16_t got = c.signals & c.wait_mask;
  if (!c.wait_any) c.signals &= static_cast<uint16_t>(~c.wait_mask);
  if (frame_log_) [[unlikely]]  // what the context (and an idle ME) waited on
    frame_log_->woke(m.index, ci, got, c.state_since, m.time, m.cur < 0 && m.ready_mask == 0, t);
  if (m.cur < 0 && m.ready_mask == 0 && m.time < t) {  // the ME was idle: it wakes up now
    m.idle += t - m.time;
    m.time = t;
  }
  set_state(m, ci, CtxState::Ready, std::max(t, m.time));
}

inline void Chip::deliver(const Event& ev) {
  ME& m = mes_[ev.me];
  Context& c = m.ctx[ev.ctx];
  const std::span<uint32_t> file = ev.file == 0 ? m.sram_in() : m.dram_in();
  for (int k = 0; k < ev.nwords; ++k) {
    size_t p = phys(m, ev.ctx, ev.xfer + k);
    if (p < file.size()) file[p] = ev.words[k];
  }
  // the ME's scheduler key depends on fifo_stalled, cur, ready_mask and time: only a
  // released command FIFO or a wake-up changes them here (the key is current otherwise)
  bool key_changed = false;
  if (ev.counts) {
    m.outstanding--;
    if (m.fifo_stalled) {
      m.fifo_stalled = false;
      key_changed = true;
      if (m.time < ev.time) {
        m.stalled += ev.time - m.time;
        m.time = ev.time;
      }
    }
  }
  if (ev.sig > 0) {
    c.signals |= static_cast<uint16_t>(1u << ev.sig);
    key_changed |= wake_check(m, ev.ctx, ev.time);
  }
  if (key_changed && !q_active_) refresh_key(m);  // the quantum schedule has no run queue
}

// kDebug (run_loop<true>): the lockstep log records deliveries to its ME; the plain loop
// has no such test.  Out of line as the plain function was: inlined, it made run_loop so
// big that GCC stopped inlining refresh_key there (+5 % core instructions, callgrind).
template <bool kDebug>
[[gnu::noinline]] void Chip::process_events_until(uint64_t t) {
  while (events_.top_time() <= t) {  // an empty queue's top time is UINT64_MAX
    uint32_t slot = events_.pop();
#ifdef NPKIT_BURST_STATS
    stats_.events++;
#endif
    event_free_.push_back(slot);  // deliver posts nothing, so the slot stays intact meanwhile
    deliver(event_pool_[slot]);
    if constexpr (kDebug) {
      const Event& ev = event_pool_[slot];
      if (ev.me == debug_.lockstep_me) lockstep_delivered(ev, mes_[ev.me]);
    }
  }
}

// ------------------------------------------------------------------ context switching
// Round robin: the first Ready context after the last one picked, i.e. the lowest set bit
// of the ready mask rotated right by last + 1.
inline bool Chip::pick_context(ME& m) {
  if (m.ready_mask == 0 || m.contexts == 0) return false;
  const int n = m.contexts;
  const int start = m.last + 1;  // 1..n
  const uint32_t all = (1u << n) - 1;
  const uint32_t rot = ((m.ready_mask >> start) | (m.ready_mask << (n - start))) & all;
  int ci = start + __builtin_ctz(rot);
  if (ci >= n) ci -= n;
  set_state_ready_to_executing(m, ci);
  m.cur = ci;
  m.last = ci;
  return true;
}

void Chip::step_swap(ME& m, Context& c, int ci, uint8_t mode) {
  m.cur = -1;
  // the context is the executing one (a swap of no other is possible)
  if (mode == isa::ctx_arb_modes::KILL) {
    set_state_from_executing(m, ci, CtxState::Inactive);
    return;
  }
  if (mode == isa::ctx_arb_modes::VOLUNTARY) {
    set_state_from_executing(m, ci, CtxState::Ready);
    return;
  }
  c.wait_any = mode == isa::ctx_arb_modes::ANY;
  const uint16_t got = c.signals & c.wait_mask;
  const bool ok = c.wait_any ? got != 0 : got == c.wait_mask;
  if (ok && !frame_log_) {
    // The signals are already there: what going to sleep and wake_check at m.time do, a
    // sleep of no cycles (no time or trace interval for it; the ME is not idle, it has just
    // run this context), without the detour.
    if (!c.wait_any) c.signals &= static_cast<uint16_t>(~c.wait_mask);
    set_state_from_executing(m, ci, CtxState::Ready);
    return;
  }
  set_state_from_executing(m, ci, CtxState::Sleeping);
  if (ok) wake_check(m, ci, m.time);  // the frame log records the wake-up
}

// ------------------------------------------------------------------ the dispatch loop
// One burst of ME m from its local time: ends before `end` (or earlier, see shorten_burst).
// When the run's limit comes first, the burst is cut there and the rest of it is the first
// step of the next run: the schedule (which ME runs when, for how long) is the one a single
// run makes, however the host slices its runs; only the pause is new.
template <bool kDebug>
[[gnu::always_inline]] inline void Chip::run_burst(ME& m, uint64_t end, uint64_t limit) {
  now_ = std::max(now_, m.time);
  burst_end_ = end;
  burst_stop_ = std::min(end, limit);
#ifdef NPKIT_BURST_STATS
  const uint64_t start = m.time;
#endif
  if constexpr (kDebug) run_me_debug(m);
  else run_me<false>(m);
#ifdef NPKIT_BURST_STATS
  note_burst(m, start, end, limit);
#endif
  refresh_key(m);
  if (retired_ != last_progress_retired_) {
    last_progress_retired_ = retired_;
    last_progress_time_ = m.time;
  }
  // run_me stops early only with no Ready context or a full command FIFO, both before
  // burst_stop_; past the limit and short of the end, the limit cut the burst
  if (m.time >= limit && m.time < burst_end_) {
    cut_me_ = m.index;
    cut_end_ = burst_end_;
  }
}

// inlined into run_burst: a burst is 2.4-2.6 ME instructions, so the call's entry and exit
// (saved registers, stack frame) were a noticeable part of it
template <bool kDebug>
[[gnu::always_inline]] inline void Chip::run_me(ME& m) {
  int ci = -1;
  uint32_t pc = 0;
  // instructions retired in this burst: the ME's busy/instruction counters and the chip's
  // retired_ are only read between bursts, so they are added once, on the way out
  uint64_t done = 0;
  const auto flush = [&] {
    m.busy += done;
    m.instructions += done;
    retired_ += done;
  };
  try {
    // The code array does not change during a run (load and trace points are host calls).
    const Insn* const code = m.code.data();
    while (m.time < burst_stop_) {
      if (m.cur < 0 && !pick_context(m)) break;  // idle: no Ready context
      ci = m.cur;
      Context& c = m.ctx[ci];
      // c.defer_left != 0, kept in a register: only this loop changes c.defer_left, so the
      // common instruction (outcome Next, no defer slot pending) takes one test after the
      // handler.  m.cur only changes in step_swap (called here) and pick_context, so the
      // context runs until a swap, a stall, or the burst's end (handlers may shorten
      // burst_stop_).
      bool in_defer = c.defer_left != 0;
      for (;;) {
        pc = c.pc;
        if constexpr (kDebug) {
          if (debug_before(m, ci, pc, done)) goto done_burst;  // a breakpoint: stop before it
        }
        const Insn& in = code[pc];
        c.pc = pc + 1;
        const Outcome o = kHandlers[in.handler](*this, m, c, ci, in);
        if (o == Outcome::Stall) [[unlikely]] {  // command FIFO full: retry when a command completes
          c.pc = pc;
          m.fifo_stalled = true;
          goto done_burst;
        }
        m.time += 1;
        done++;
        c.instructions++;
        // a stop found here ends the loop once this instruction's branch or swap is done
        if constexpr (kDebug) debug_after(m, ci, pc, in, done);
        if ((o != Outcome::Next) | in_defer) [[unlikely]] {
          if (in_defer) {
            if (o != Outcome::Next)
              fault("illegal_instruction", "a taken branch or context swap in a defer slot");
            if (--c.defer_left == 0) {
              in_defer = false;
              if (c.deferred == Deferred::Branch) {
                c.pc = c.defer_target;
                c.deferred = Deferred::None;
              } else {
                step_swap(m, c, ci, c.swap_mode);
                c.deferred = Deferred::None;
                break;  // the context swapped out
              }
            }
          } else if (o == Outcome::Taken) {
            if (in.defer == 0) {
              c.pc = c.defer_target;
              m.time += cfg_.branch_taken_penalty;
              m.stalled += cfg_.branch_taken_penalty;
            } else {
              uint64_t pen = cfg_.branch_taken_penalty > in.defer ? cfg_.branch_taken_penalty - in.defer : 0;
              m.time += pen;
              m.stalled += pen;
              c.defer_left = in.defer;
              c.deferred = Deferred::Branch;
              in_defer = true;
            }
          } else {  // Outcome::Swap
            if (in.defer == 0) {
              step_swap(m, c, ci, c.swap_mode);
              break;  // the context swapped out
            }
            c.defer_left = in.defer;
            c.deferred = Deferred::Swap;
            in_defer = true;
          }
        }
        if (m.time >= burst_stop_) goto done_burst;
      }
    }
  done_burst:;
  } catch (const LocalFault& f) {
    flush();
    throw SimError(f.kind, m.index, ci, pc, f.what());
  } catch (const MediaFault& f) {
    flush();
    throw SimError("media", m.index, ci, pc, f.what());
  }
  flush();
}

// The instrumented loop (run_loop<true> only), out of line.
[[gnu::noinline]] void Chip::run_me_debug(ME& m) {
  run_me<true>(m);
  // a debugger stop cuts the burst like a limit: the next run finishes it first
  if (!debug_.stop.empty()) {
    cut_me_ = m.index;
    cut_end_ = burst_end_;
  }
}

#ifdef NPKIT_BURST_STATS
BurstStats::~BurstStats() {
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::fprintf(stderr,
               "burst stats: %llu bursts, ended by the next event %llu, the 16-cycle cap %llu, "
               "a command of its own %llu, the run's limit %llu, no Ready context %llu, a full "
               "command FIFO %llu; next burst on the same ME %llu; %llu event steps, %llu events\n",
               u(bursts), u(end_event), u(end_cap), u(end_own), u(end_limit), u(end_idle),
               u(end_stall), u(same_me_next), u(event_steps), u(events));
}

// Why the burst of ME m that started at `start` with the schedule's end `end` ended.
void Chip::note_burst(const ME& m, uint64_t start, uint64_t end, uint64_t limit) {
  stats_.bursts++;
  if (stats_.last_me == m.index) stats_.same_me_next++;
  stats_.last_me = m.index;
  if (m.fifo_stalled) stats_.end_stall++;
  else if (m.cur < 0 && m.time < burst_stop_) stats_.end_idle++;
  else if (burst_stop_ == limit && limit < burst_end_) stats_.end_limit++;
  else if (burst_end_ < end) stats_.end_own++;
  else if (end == start + cfg_.burst_cycles) stats_.end_cap++;
  else stats_.end_event++;
}
#endif

Outcome exec_nop(Chip&, ME&, Context&, int, const Insn&) { return Outcome::Next; }

Outcome exec_off_end(Chip&, ME& m, Context& c, int, const Insn&) {
  fault("control_store_overflow", "the PC ran off the end of the image (" + std::to_string(m.image_words) +
        " words) at " + std::to_string(c.pc - 1));
}

// ------------------------------------------------------------------ scheduler
bool Chip::waiting_on_media_only() const {
  for (const ME& m : mes_)
    for (int ci = 0; ci < m.contexts; ++ci) {
      const Context& c = m.ctx[ci];
      if (c.state == CtxState::Sleeping && !(c.wait_mask & media_sigs_[m.index][ci])) return false;
    }
  return true;
}

void Chip::deadlock(const char* why) {
  std::ostringstream msg;
  msg << why << "; waiting:";
  int first_me = -1, first_ctx = -1, listed = 0;
  int64_t first_pc = -1;
  for (const ME& m : mes_)
    for (int ci = 0; ci < m.contexts; ++ci) {
      const Context& c = m.ctx[ci];
      if (c.state != CtxState::Sleeping) continue;
      if (first_me < 0) { first_me = m.index; first_ctx = ci; first_pc = c.pc; }
      if (++listed > 24) {
        if (listed == 25) msg << " ...";
        continue;
      }
      msg << " [me " << m.index << " ctx " << ci << " pc " << c.pc << " waits for "
          << (c.wait_any ? "any" : "all") << " of signals {";
      bool comma = false;
      for (int s = 1; s < 16; ++s)
        if (c.wait_mask & (1u << s)) { msg << (comma ? "," : "") << s; comma = true; }
      msg << "}]";
    }
  throw SimError("deadlock", first_me, first_ctx, first_pc, msg.str());
}

std::string Chip::run(uint64_t max_cycles, int64_t stop_tx_frames, bool until_idle) {
  debug_.stop.clear();
  debug_.stop_watch = -1;
  if (quantum_) {
    if (debug_.active())
      throw std::invalid_argument("the debugger's hooks need the default schedule, not \"quantum\"");
    return run_quantum(max_cycles, stop_tx_frames, until_idle);
  }
  if (!debug_.active()) return run_loop<false>(max_cycles, stop_tx_frames, until_idle);
  // the debugger's hooks are set: the scheduler loop with the instrumented dispatch loop
  debug_capture_watches();
  return run_loop<true>(max_cycles, stop_tx_frames, until_idle);
}

template <bool kDebug>
[[gnu::noinline]] std::string Chip::run_loop(uint64_t max_cycles, int64_t stop_tx_frames,
                                             bool until_idle) {
  uint64_t limit = max_cycles > UINT64_MAX - now_ ? UINT64_MAX : now_ + max_cycles;
  auto tx_total = [&] { return media_->tx_frames_total(); };
  uint64_t tx_start = tx_total();
  std::string result;
  // last_progress_* carry over from the previous run: where a run ends must not change
  // when a deadlock is found (a sliced run would otherwise restart the clock every slice)
  for (const ME* m : loaded_) {  // the host may have changed MEs between runs
    if (m->time > kLatestEvent) fault("time_limit", "simulated time beyond 2^57 cycles");
    refresh_key(*m);
  }
  // a debugger stop (a cut burst, see run_burst) ends the run at the stopping ME's time, or
  // before: never past the burst's end, which no pending event precedes (the MEs idle up to
  // now_ are brought up to it below, and must not pass their next wake-up)
  [[maybe_unused]] const auto debug_stopped = [&] {
    if (debug_.stop.empty()) return false;
    now_ = std::max(now_, std::min({mes_[cut_me_].time, cut_end_, limit}));
    result = debug_.stop;
    return true;
  };
  for (;;) {
    if (cut_me_ >= 0) {  // the previous run's limit cut a burst: it is the next step
      ME& m = mes_[cut_me_];
      if (m.time >= limit) { now_ = limit; result = "cycles"; break; }
      cut_me_ = -1;
      run_burst<kDebug>(m, std::min({cut_end_, next_event_time(), media_->next_event()}), limit);
      if (cut_me_ >= 0) {
        if constexpr (kDebug) {
          if (debug_stopped()) break;
        }
        now_ = limit; result = "cycles"; break;
      }
      continue;
    }
    uint64_t t_ev = next_event_time();
    uint64_t t_md = media_->next_event();
    uint64_t t_ext = std::min(t_ev, t_md);
    // the runnable ME with the smallest local time, the lowest index on a tie
    const uint64_t top = runq_.top();
    const uint64_t t_me = top == RunQueue::kNone ? UINT64_MAX : RunQueue::time_of(top);
    ME* best = top == RunQueue::kNone ? nullptr : loaded_[RunQueue::pos_of(top)];

    if (t_ext != UINT64_MAX && t_ext <= t_me) {  // an event comes first
      if (t_ext >= limit) { now_ = limit; result = "cycles"; break; }
      now_ = std::max(now_, t_ext);
      try {
        if (t_md <= t_ext) media_->advance(t_ext);
      } catch (const MediaFault& f) {
        throw SimError("media", -1, -1, -1, f.what());
      }
#ifdef NPKIT_BURST_STATS
      stats_.event_steps++;
      stats_.last_me = -1;
#endif
      process_events_until<kDebug>(t_ext);
      if (stop_tx_frames >= 0 && tx_total() - tx_start >= static_cast<uint64_t>(stop_tx_frames)) {
        result = "frames";
        break;
      }
      // no progress for deadlock_cycles while nothing more can come from the ports (a paced
      // replay may legitimately leave every thread asleep for longer)
      if (retired_ == last_progress_retired_ && now_ > last_progress_time_ + cfg_.deadlock_cycles &&
          media_->next_event() == UINT64_MAX && !waiting_on_media_only())
        deadlock("no instruction retired for deadlock_cycles");
      continue;
    }
    if (!best) {  // nothing runnable, nothing scheduled: quiescent
      for (const ME& m : mes_) now_ = std::max(now_, std::min(m.time, limit));
      if (!waiting_on_media_only()) deadlock("no context is ready and no event is pending");
      if (until_idle) { result = "idle"; break; }
      now_ = std::max(now_, limit == UINT64_MAX ? now_ : limit);
      result = "cycles";
      break;
    }
    if (t_me >= limit) { now_ = limit; result = "cycles"; break; }
    run_burst<kDebug>(*best, std::min(t_me + cfg_.burst_cycles, t_ext), limit);
    if (cut_me_ >= 0) {
      if constexpr (kDebug) {
        if (debug_stopped()) break;
      }
      now_ = limit; result = "cycles"; break;
    }
  }
  // bring MEs that were idle or stalled up to now, so their cycle counters add up
  for (ME& m : mes_) {
    if (m.time >= now_ || m.contexts == 0) continue;
    if (m.fifo_stalled) m.stalled += now_ - m.time;
    else if (m.cur < 0 && m.ready_mask == 0) m.idle += now_ - m.time;
    else continue;
    m.time = now_;
  }
  return result;
}

// ------------------------------------------------------------------ the quantum schedule
// Opt-in (set_schedule("quantum")); docs/sim-core.md, "The quantum schedule".  Time advances
// in quanta of Q cycles on a fixed grid.  In a quantum each ME runs on its own, in index
// order, from its time to the quantum's end: only its own events (all known at the
// quantum's start) and its own same-ME signals interrupt it.  Its memory/unit commands are
// recorded at issue and applied at the quantum's end in (issue cycle, ME, issue order)
// order; no completion can fall inside the quantum, since Q is at most every unit's latency.

// Q = the shortest latency from a command's issue (or a media event) to an effect another
// agent can see: every unit's latency, the MSF round trip and the autopush latency.
uint64_t Chip::quantum_for(const ChipConfig& cfg) {
  uint64_t q = std::min({cfg.sram.latency, cfg.dram.latency, cfg.scratch.latency, cfg.hash.latency,
                         cfg.msf_csr_latency, cfg.media.autopush_latency});
  return std::max<uint64_t>(q, 1);
}

void Chip::set_schedule(const std::string& name) {
  if (name != "default" && name != "quantum")
    throw std::invalid_argument("schedule is \"default\" or \"quantum\", got \"" + name + "\"");
  const bool q = name == "quantum";
  if (q == quantum_) return;
  quantum_ = q;
  quantum_cycles_ = quantum_for(cfg_);
  cut_me_ = -1;  // a cut burst of the default schedule: its ME simply goes on from its time
  // the first quantum starts on the grid at or after now
  q_next_ = (now_ + quantum_cycles_ - 1) / quantum_cycles_ * quantum_cycles_;
}

// A fault may leave a quantum half run; the next run starts clean (its events are lost).
void Chip::reset_quantum_state() {
  q_active_ = false;
  q_me_ = -1;
  q_events_.resize(mes_.size());
  q_ring_delta_.assign(rings_.size(), 0);
  q_ring_dirty_ = false;
  for (auto& l : q_events_) {
    for (uint32_t slot : l) event_free_.push_back(slot);
    l.clear();
  }
  pending_used_ = 0;
  q_nn_log_.clear();
  q_nn_pending_.clear();
}

// An event posted inside the quantum for a cycle before its end: one for the ME running now
// (a same-ME signal) joins its list, in time order; one for another ME (a next-neighbour
// signal) or from the units' phase is held to the quantum's end, the earliest cycle that
// ME's run has not passed.  True: the event was placed.
bool Chip::post_in_quantum(uint32_t slot) {
  Event& e = event_pool_[slot];
  if (e.me == q_me_) {
    auto& l = q_events_[q_me_];
    auto at = std::upper_bound(l.begin(), l.end(), e.time,
                               [&](uint64_t t, uint32_t s) { return t < event_pool_[s].time; });
    l.insert(at, slot);
    seq_++;
    shorten_burst(e.time);
    return true;
  }
  e.time = q_end_;
  return false;
}

// ME m from its time to `end`: its bursts end only at its own events.
void Chip::run_quantum_me(ME& m, uint64_t end) {
  auto& l = q_events_[m.index];
  size_t k = 0;
  q_me_ = m.index;
  if (q_ring_dirty_) {  // the previous ME's ring commands: this ME sees none of its own yet
    std::fill(q_ring_delta_.begin(), q_ring_delta_.end(), 0);
    q_ring_dirty_ = false;
  }
  q_nn_log_.clear();
  q_nn_puts_ = 0;
  for (;;) {
    const uint64_t te = k < l.size() ? event_pool_[l[k]].time : end;
    const bool can = !m.fifo_stalled && (m.cur >= 0 || m.ready_mask != 0);
    if (can && m.time < te) {
      burst_end_ = te;
      burst_stop_ = te;
      run_me<false>(m);
      continue;  // a same-ME signal may have joined the list
    }
    if (k >= l.size()) break;
    const uint32_t slot = l[k++];
    event_free_.push_back(slot);  // deliver posts nothing
    deliver(event_pool_[slot]);
  }
  l.clear();
  q_me_ = -1;
  const uint64_t bit = uint64_t{1} << m.index;
  q_run_mask_ = can_run(m) ? q_run_mask_ | bit : q_run_mask_ & ~bit;
  const auto target = static_cast<int16_t>(next_me(m).index);
  for (const NnWrite& w : q_nn_log_) q_nn_pending_.push_back(NnPending{target, w});
}

void Chip::run_one_quantum(uint64_t start, uint64_t end) {
  (void)start;
  // the media model first: its events before the end, and the autopushes due in the quantum
  // (none can be created for a cycle before the end: Q <= autopush latency)
  if (media_->next_event() < end) {
    try {
      media_->advance(end - 1);
    } catch (const MediaFault& f) {
      throw SimError("media", -1, -1, -1, f.what());
    }
  }
  // every event due in the quantum, to its ME's list in (time, seq) order
  uint64_t with_events = 0;  // bit i: ME i has an event in the quantum
  while (events_.top_time() < end) {
    const uint32_t slot = events_.pop();
    const int16_t me = event_pool_[slot].me;
    q_events_[me].push_back(slot);
    with_events |= uint64_t{1} << me;
  }
  q_active_ = true;
  q_end_ = end;
  // In index order, the MEs that can run or have an event (at most 64 MEs, config.cpp);
  // any other would do nothing in its turn (q_run_mask_).  No other ME's list changes
  // while one runs (post_in_quantum holds an event for another ME to the quantum's end),
  // so the set is known here.
  for (uint64_t todo = q_run_mask_ | with_events; todo != 0; todo &= todo - 1)
    run_quantum_me(mes_[static_cast<size_t>(__builtin_ctzll(todo))], end);
  // the units take the quantum's commands in (issue cycle, ME, issue order) order: pending_
  // is in (ME, issue order) already, so a sort on (cycle, position) gives it
  pending_order_.clear();
  for (uint32_t i = 0; i < pending_used_; ++i) pending_order_.emplace_back(pending_[i].t, i);
  std::sort(pending_order_.begin(), pending_order_.end());
  for (const auto& [t, i] : pending_order_) {
    const PendingCmd& cmd = pending_[i];
    try {
      apply_command(*this, cmd);
    } catch (const LocalFault& f) {
      throw SimError(f.kind, cmd.me, cmd.ci, cmd.pc, f.what());
    } catch (const MediaFault& f) {
      throw SimError("media", cmd.me, cmd.ci, cmd.pc, f.what());
    }
  }
  pending_used_ = 0;
  // next-neighbour writes: each ME has one writer, so the order is its program order
  for (const NnPending& p : q_nn_pending_) {
    ME& nx = mes_[p.me];
    if (!p.w.ring) {
      nx.nn[p.w.idx] = p.w.value;
    } else {  // room was checked at the put, counting the writer's puts of the quantum
      nx.nn[nx.nn_put] = p.w.value;
      nx.nn_put = static_cast<uint32_t>((nx.nn_put + 1) % nx.nn.size());
    }
  }
  q_nn_pending_.clear();
  q_active_ = false;
}

std::string Chip::run_quantum(uint64_t max_cycles, int64_t stop_tx_frames, bool until_idle) {
  uint64_t limit = max_cycles > UINT64_MAX - now_ ? UINT64_MAX : now_ + max_cycles;
  const uint64_t tx_start = media_->tx_frames_total();
  const uint64_t q = quantum_cycles_;
  reset_quantum_state();
  q_run_mask_ = 0;  // the host may have loaded or changed MEs between runs
  for (const ME* m : loaded_) {
    if (m->time > kLatestEvent) fault("time_limit", "simulated time beyond 2^57 cycles");
    if (can_run(*m)) q_run_mask_ |= uint64_t{1} << m->index;
  }
  std::string result;
  for (;;) {
    uint64_t start = q_next_;
    if (q_run_mask_ == 0) {  // nothing to run: on to the quantum of the next event
      const uint64_t t_ext = std::min(next_event_time(), media_->next_event());
      if (t_ext == UINT64_MAX) {  // quiescent
        for (const ME& m : mes_) now_ = std::max(now_, std::min(m.time, limit));
        if (!waiting_on_media_only()) deadlock("no context is ready and no event is pending");
        if (until_idle) { result = "idle"; break; }
        now_ = std::max(now_, limit == UINT64_MAX ? now_ : limit);
        result = "cycles";
        break;
      }
      start = std::max(start, t_ext / q * q);
    }
    if (start >= limit) { now_ = std::max(now_, limit); result = "cycles"; break; }
    const uint64_t end = start + q;
    run_one_quantum(start, end);
    q_next_ = end;
    now_ = std::max(now_, std::min(end, limit));
    if (retired_ != last_progress_retired_) {
      last_progress_retired_ = retired_;
      last_progress_time_ = end;
    }
    if (stop_tx_frames >= 0 &&
        media_->tx_frames_total() - tx_start >= static_cast<uint64_t>(stop_tx_frames)) {
      result = "frames";
      break;
    }
    if (retired_ == last_progress_retired_ && now_ > last_progress_time_ + cfg_.deadlock_cycles &&
        media_->next_event() == UINT64_MAX && !waiting_on_media_only())
      deadlock("no instruction retired for deadlock_cycles");
  }
  // bring MEs that were idle or stalled up to now, so their cycle counters add up
  for (ME& m : mes_) {
    if (m.time >= now_ || m.contexts == 0) continue;
    if (m.fifo_stalled) m.stalled += now_ - m.time;
    else if (m.cur < 0 && m.ready_mask == 0) m.idle += now_ - m.time;
    else continue;
    m.time = now_;
  }
  return result;
}

// ------------------------------------------------------------------ counters and trace
uint64_t Chip::ctx_cycles(int me_index, int ci, CtxState s) const {
  const ME& m = me(me_index);
  const Context& c = m.ctx[ci];
  uint64_t v = c.state_cycles[static_cast<int>(s)];
  if (c.state == s) {
    uint64_t end = std::max(now_, m.time);
    if (end > c.state_since) v += end - c.state_since;
  }
  return v;
}

std::vector<TraceInterval> Chip::take_trace() {
  // close the open intervals at `now` (they continue from there in the next take), or at
  // the ME's own time when a cut burst left it behind `now`: its next change comes later
  if (tracing_)
    for (ME& m : mes_) {
      const uint64_t t = std::min(now_, m.time);
      for (int ci = 0; ci < m.contexts; ++ci)
        if (m.ctx[ci].state_since < t) set_state(m, ci, m.ctx[ci].state, t);
    }
  std::vector<TraceInterval> out;
  out.swap(trace_);
  return out;
}

}  // namespace npkit
