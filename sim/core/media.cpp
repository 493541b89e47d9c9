// The media model: MSF, RBUF, TBUF, receive-thread freelists with autopush, ports at line
// rate.  See media.hpp and docs/media.md.
#include "media.hpp"

#include "frame_log.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

#include "isa_gen.hpp"

namespace npkit {
namespace {

using u128 = unsigned __int128;

// The MSF address map and fast_wr CSR numbers come from the ISA table (sim/isa.py).
constexpr uint32_t kRbufBase = isa::MSF_RBUF_BASE;
constexpr uint32_t kTbufBase = isa::MSF_TBUF_BASE;
constexpr uint32_t kTbufCtlBase = isa::MSF_TBUF_CTL_BASE;
constexpr uint32_t kTxSequenceBase = isa::MSF_TX_SEQUENCE_BASE;
constexpr uint32_t kFreelistBase = isa::MSF_RX_THREAD_FREELIST_BASE;
constexpr uint32_t kElementDone = isa::MSF_RBUF_ELEMENT_DONE;
// The freelist CSRs fill the gap up to the next CSR (16 lists with the current table).
constexpr int kFreelists = static_cast<int>(kElementDone - kFreelistBase);
static_assert(kRbufBase < kTbufBase && kTbufBase < kTbufCtlBase &&
                  kTbufCtlBase < kTxSequenceBase && kFreelistBase < kElementDone,
              "the MSF address map in sim/isa.py must be ordered");
constexpr int kMaxSignal = (1 << isa::fmt_mem::SIG.width) - 1;  // signals 1..15
constexpr int kXferLimit = static_cast<int>(isa::XFER_NONE);      // relative $ index bound

// A byte buffer on the stack for the usual MSF transfer (up to 16 words), on the heap beyond.
class SmallBytes {
 public:
  explicit SmallBytes(size_t n) : n_(n) {
    if (n > sizeof(local_)) heap_.resize(n);
  }
  uint8_t* data() { return n_ > sizeof(local_) ? heap_.data() : local_; }
  size_t size() const { return n_; }
  uint8_t& operator[](size_t i) { return data()[i]; }

 private:
  size_t n_;
  uint8_t local_[64];
  std::vector<uint8_t> heap_;
};

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

u128 gcd128(u128 a, u128 b) {
  while (b != 0) {
    u128 r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// A positive double as an exact fraction n / d with d a power of ten <= 1e6: rates and clocks
// are given as decimal numbers (9.58464e9, 1.4e9), so this recovers them exactly.
std::pair<u128, u128> decimal_fraction(double x, const char* what) {
  if (!(x > 0) || !std::isfinite(x) || x > 1e15) {
    throw std::invalid_argument(std::string(what) + " must be a positive number below 1e15");
  }
  long double scale = 1;
  for (int k = 0; k <= 6; ++k, scale *= 10) {
    long double v = static_cast<long double>(x) * scale;
    long double r = std::round(v);
    if (std::fabs(v - r) <= 1e-6L || k == 6) {
      if (r < 1) throw std::invalid_argument(std::string(what) + " is too small");
      return {static_cast<u128>(r), static_cast<u128>(scale)};
    }
  }
  return {1, 1};  // unreachable
}

}  // namespace

// ------------------------------------------------------------------------ construction
Media::Media(MediaConfig cfg, MediaHost& host) : cfg_(std::move(cfg)), host_(host) {
  const int n = static_cast<int>(cfg_.ports.size());
  const int eb = cfg_.element_bytes;
  if (eb <= 0 || eb % 8 != 0) {
    throw std::invalid_argument("element_bytes must be a positive multiple of 8 (64, 128 or 256)");
  }
  if (n > static_cast<int>(tx_control::kPortMask) + 1) {
    throw std::invalid_argument("at most " + std::to_string(tx_control::kPortMask + 1) +
                                " ports (the port field of the status and control words is 8 bits)");
  }
  if (cfg_.rbuf_bytes < 0 || cfg_.rbuf_bytes > static_cast<int64_t>(kTbufBase - kRbufBase)) {
    throw std::invalid_argument("rbuf_bytes must be 0.." + std::to_string(kTbufBase - kRbufBase));
  }
  if (cfg_.tbuf_bytes < 0 || cfg_.tbuf_bytes > static_cast<int64_t>(kTbufCtlBase - kTbufBase)) {
    throw std::invalid_argument("tbuf_bytes must be 0.." + std::to_string(kTbufCtlBase - kTbufBase));
  }
  if (cfg_.rbuf_partitions != 0 && cfg_.rbuf_partitions != 1 && cfg_.rbuf_partitions != 2 &&
      cfg_.rbuf_partitions != 4) {
    throw std::invalid_argument("rbuf_partitions must be 1, 2 or 4 (HRM), or 0 for one per port, got " +
                                std::to_string(cfg_.rbuf_partitions));
  }
  // 0: one partition per port as in the HRM's 1-, 2- and 4-port modes (3 ports use 4), one
  // shared by all ports beyond 4 (channels of one SPI-4 interface)
  const int parts = cfg_.rbuf_partitions != 0 ? cfg_.rbuf_partitions
                    : n <= 2                  ? std::max(n, 1)
                    : n <= 4                  ? 4
                                              : 1;
  if (n > 0) {
    rx_elements_ = cfg_.rbuf_bytes / eb / parts;
    tx_elements_ = cfg_.tbuf_bytes / eb / n;
    if (rx_elements_ < 1 || tx_elements_ < 1) {
      throw std::invalid_argument("RBUF needs at least one element per partition and TBUF one "
                                  "per port (" + std::to_string(parts) + " partitions, " +
                                  std::to_string(n) + " ports of " + std::to_string(eb) +
                                  "-byte elements)");
    }
    if (static_cast<int64_t>(rx_elements_) * parts > static_cast<int64_t>(rx_status::kFirstMask) + 1) {
      throw std::invalid_argument("too many RBUF elements for the 16-bit element field");
    }
  }
  if (static_cast<int64_t>(tx_elements_) * n * 4 > kTxSequenceBase - kTbufCtlBase) {
    throw std::invalid_argument("too many TBUF elements for the control-word address range");
  }
  auto [clock_n, clock_d] = decimal_fraction(cfg_.me_clock_hz, "me_clock_hz");
  rbuf_.assign(static_cast<size_t>(cfg_.rbuf_bytes), 0);
  tbuf_.assign(static_cast<size_t>(cfg_.tbuf_bytes), 0);
  rbuf_state_.assign(n > 0 ? static_cast<size_t>(rx_elements_) * parts : 0, RbufState::kFree);
  rbuf_port_.assign(rbuf_state_.size(), 0);
  partitions_.resize(n > 0 ? parts : 0);
  for (int k = 0; k < static_cast<int>(partitions_.size()); ++k) {
    for (int e = 0; e < rx_elements_; ++e) partitions_[k].free.push_back(k * rx_elements_ + e);
  }
  frames_waiting_.resize(kFreelists);
  threads_waiting_.resize(kFreelists);
  counters_.assign(n, PortCounters{});
  port_frames_added_.assign(n, 0);
  ports_.resize(n);
  for (int i = 0; i < n; ++i) {
    Port& p = ports_[i];
    p.cfg = cfg_.ports[i];
    if (p.cfg.overhead_bytes < 0 || p.cfg.overhead_bytes > 4096) {
      throw std::invalid_argument("port " + std::to_string(i) + ": overhead_bytes must be 0..4096");
    }
    if (p.cfg.rx_freelist < 0 || p.cfg.rx_freelist >= kFreelists) {
      throw std::invalid_argument("port " + std::to_string(i) + ": rx_freelist must be 0.." +
                                  std::to_string(kFreelists - 1));
    }
    // cycles per bit = clock / rate = (cn / cd) / (rn / rd) = cn * rd / (cd * rn)
    auto [rate_n, rate_d] = decimal_fraction(p.cfg.rate_bps, "rate_bps");
    u128 num = clock_n * rate_d, den = clock_d * rate_n;
    u128 g = gcd128(num, den);
    p.clock.num = num / g;
    p.clock.den = den / g;
    if (p.clock.num >> 62 || p.clock.den >> 62) {
      throw std::invalid_argument("port " + std::to_string(i) +
                                  ": rate_bps / me_clock_hz ratio is too fine to keep exact");
    }
    p.rx_partition = i % parts;
    p.tx_first = i * tx_elements_;
    p.tx_slots.assign(tx_elements_, TxSlot{});
  }
}

int Media::rx_freelists() const { return kFreelists; }

// ------------------------------------------------------------------------ time helpers
uint64_t Media::cycle_ceil(const Port& p, u128 units) const {
  return static_cast<uint64_t>((units + p.clock.den - 1) / p.clock.den);
}

Media::u128 Media::wire_units(const Port& p, size_t length) const {
  return static_cast<u128>(length + static_cast<size_t>(p.cfg.overhead_bytes)) * 8u * p.clock.num;
}

// ------------------------------------------------------------------------ host side
void Media::add_rx_frame(int port, std::vector<uint8_t> bytes, int64_t not_before_cycle) {
  next_valid_ = false;
  if (port < 0 || port >= num_ports()) {
    throw std::invalid_argument("add_rx_frame: no port " + std::to_string(port) + " (" +
                                std::to_string(num_ports()) + " ports)");
  }
  if (bytes.empty() || bytes.size() > rx_status::kLengthMask) {
    throw std::invalid_argument("add_rx_frame: frame length must be 1..65535 bytes, got " +
                                std::to_string(bytes.size()));
  }
  Port& p = ports_[port];
  // The frame starts when the line is free, not in the past, and not before its timestamp.
  u128 start = std::max(p.rx_line_free, static_cast<u128>(now_) * p.clock.den);
  if (not_before_cycle >= 0) {
    start = std::max(start, static_cast<u128>(not_before_cycle) * p.clock.den);
  }
  u128 end = start + wire_units(p, bytes.size());
  p.rx_line_free = end;
  PendingRx f{std::move(bytes), start, 0, 0, frames_added_++};
  f.next_time = mpacket_time(p, f);
  const uint32_t seq = port_frames_added_[static_cast<size_t>(port)]++;
  if (log_) [[unlikely]]
    log_->arrival(f.id, port, seq, static_cast<uint32_t>(f.bytes.size()), cycle_ceil(p, start),
                  cycle_ceil(p, end));
  p.rx_pending.push_back(std::move(f));
}

// Mpacket k of a frame is complete in the RBUF when its last byte has arrived: k < last at
// the instant byte (k + 1) * element_bytes has crossed the wire, counted from the frame's
// first bit; the last mpacket at the frame's last bit (its overhead included), i.e. the
// cycle the whole frame used to arrive.  (Decision: the per-frame overhead is counted at
// the end, so intermediate mpackets are early by at most the preamble's 8 bytes.)
uint64_t Media::mpacket_time(const Port& p, const PendingRx& f) const {
  const size_t eb = static_cast<size_t>(cfg_.element_bytes);
  const size_t end_byte = static_cast<size_t>(f.next + 1) * eb;
  if (end_byte >= f.bytes.size()) return cycle_ceil(p, f.start + wire_units(p, f.bytes.size()));
  return cycle_ceil(p, f.start + static_cast<u128>(end_byte) * 8u * p.clock.num);
}

std::vector<TxFrame> Media::take_tx() {
  std::vector<TxFrame> out;
  out.swap(tx_done_);
  return out;
}

Media::Event Media::earliest() const {
  Event best{UINT64_MAX, EventKind::kNone, -1};
  // Same cycle: departures first (they free TBUF), then arrivals by port, then autopushes.
  for (int i = 0; i < num_ports(); ++i) {
    const Port& p = ports_[i];
    if (p.tx_busy && p.tx_busy_end < best.time) {
      best = {p.tx_busy_end, EventKind::kTxDeparture, i};
    }
  }
  for (int i = 0; i < num_ports(); ++i) {
    const Port& p = ports_[i];
    if (!p.rx_pending.empty() && !p.rx_stalled && p.rx_pending.front().next_time < best.time) {
      best = {p.rx_pending.front().next_time, EventKind::kRxArrival, i};
    }
  }
  if (!autopushes_.empty() && autopushes_.top().when < best.time) {
    best = {autopushes_.top().when, EventKind::kAutopush, -1};
  }
  return best;
}

void Media::advance(uint64_t t) {
  next_valid_ = false;
  Event e = earliest();
  for (; e.kind != EventKind::kNone && e.time <= t; e = earliest()) {
    switch (e.kind) {
      case EventKind::kTxDeparture: depart(ports_[e.port], e.port); break;
      case EventKind::kRxArrival: arrive(ports_[e.port], e.port); break;
      case EventKind::kAutopush: deliver_autopush(); break;
      case EventKind::kNone: break;
    }
  }
  next_time_ = e.time;  // the first event left: the cache is exact
  next_valid_ = true;
  now_ = std::max(now_, t);
}

bool Media::idle() const {
  if (!autopushes_.empty()) return false;
  for (int i = 0; i < num_ports(); ++i) {
    const PortCounters& c = counters_[i];
    if (!ports_[i].rx_pending.empty() || c.rbuf_elements_in_use || c.tbuf_elements_queued ||
        ports_[i].tx_in_frame) {
      return false;
    }
  }
  return true;
}

const std::vector<PortCounters>& Media::counters() const { return counters_; }

uint64_t Media::rx_pending_frames() const {
  uint64_t n = autopushes_.size();
  for (const Port& p : ports_) n += p.rx_pending.size() + p.rx_waiting;
  return n;
}

// ------------------------------------------------------------------------ receive
// The next mpacket of the port's oldest pending frame is complete.  It takes the element at
// the head of its partition's freelist (any element: frames need no contiguous run).  With
// no free element, a first mpacket (SOP) drops the frame whole; a later one waits until a
// receive thread frees an element -- the partition's fill level holds the rest of a frame
// that has started (SPI-4 flow control to the framer), so no frame is cut short.
// (Decision: the framer holds at most the rest of the frame in progress; frames behind it
// that find the partition still full at their first mpacket are dropped.)
void Media::arrive(Port& p, int port_index) {
  PendingRx& f = p.rx_pending.front();
  PortCounters& c = counters_[port_index];
  RxPartition& part = partitions_[p.rx_partition];
  const int eb = cfg_.element_bytes;
  const int length = static_cast<int>(f.bytes.size());
  const int count = (length + eb - 1) / eb;
  const int k = f.next;
  if (part.free.empty()) {
    if (k == 0) {
      ++c.rx_dropped_rbuf_full;
      if (log_) [[unlikely]] log_->rbuf_drop(f.id, port_index, f.next_time);
      pop_rx_frame(p, f.next_time);
    } else {
      p.rx_stalled = true;
      ++c.rx_flow_control_stalls;
    }
    return;
  }
  const int e = part.free.front();
  part.free.pop_front();
  rbuf_state_[e] = RbufState::kWaiting;
  rbuf_port_[e] = port_index;
  const int n = std::min(eb, length - k * eb);
  std::memcpy(rbuf_.data() + static_cast<size_t>(e) * eb, f.bytes.data() + static_cast<size_t>(k) * eb,
              static_cast<size_t>(n));
  part.in_use += 1;
  part.high_water = std::max(part.high_water, part.in_use);
  c.rbuf_elements_in_use += 1;
  c.rbuf_high_water_elements = std::max(c.rbuf_high_water_elements, c.rbuf_elements_in_use);
  c.rbuf_partition_high_water = std::max(c.rbuf_partition_high_water, part.high_water);

  WaitingMpacket m{port_index, e, n, k == 0, k == count - 1, f.next_time};
  if (log_) [[unlikely]] log_->element(f.id, e, k, m.sop, m.eop, m.arrival);
  if (m.eop) {
    ++c.rx_frames;
    c.rx_bytes += static_cast<uint64_t>(length);
    pop_rx_frame(p, m.arrival);
  } else {
    ++f.next;
    f.next_time = std::max(mpacket_time(p, f), f.next_time);  // after a stall: not earlier
  }

  auto& threads = threads_waiting_[p.cfg.rx_freelist];
  if (!threads.empty()) {
    RxThread thread = threads.front();
    threads.pop_front();
    pair(m, thread);
    return;
  }
  frames_waiting_[p.cfg.rx_freelist].push_back(m);
  ++p.rx_waiting;
  c.rx_waiting_high_water = std::max(c.rx_waiting_high_water, p.rx_waiting);
}

// The port's oldest frame is done (received or dropped) at cycle t; the next one cannot
// complete an mpacket before t (it may have waited behind a stalled frame).
void Media::pop_rx_frame(Port& p, uint64_t t) {
  p.rx_pending.pop_front();
  if (!p.rx_pending.empty()) {
    p.rx_pending.front().next_time = std::max(p.rx_pending.front().next_time, t);
  }
}

void Media::pair(const WaitingMpacket& m, const RxThread& thread) {
  Autopush a{};
  a.when = std::max(m.arrival, thread.since) + cfg_.autopush_latency;
  a.seq = seq_++;
  a.me = thread.me;
  a.ctx = thread.ctx;
  a.xfer = thread.xfer;
  a.sig = thread.sig;
  a.port = m.port;
  a.element = m.element;
  a.eop = m.eop;
  a.words[0] = (static_cast<uint32_t>(m.length) & rx_status::kLengthMask) |
               (static_cast<uint32_t>(m.port) << rx_status::kPortShift) |
               (m.sop ? rx_status::kSop : 0u) | (m.eop ? rx_status::kEop : 0u);
  a.words[1] = (static_cast<uint32_t>(m.element) & rx_status::kFirstMask) |
               (1u << rx_status::kCountShift);
  autopushes_.push(a);
}

void Media::deliver_autopush() {
  Autopush a = autopushes_.top();
  autopushes_.pop();
  rbuf_state_[a.element] = RbufState::kHanded;
  PortCounters& c = counters_[a.port];
  ++c.rx_mpackets;
  if (a.eop) ++c.rx_handed;
  if (log_) [[unlikely]] log_->autopush(a.element, a.me, a.ctx, a.when);
  host_.autopush(a.me, a.ctx, a.xfer, a.words, 2, a.sig, a.when);
}

void Media::register_thread(int me, int ctx, int list, uint32_t value, uint64_t t) {
  const int xfer = static_cast<int>(value & 0xFF);
  const int sig = static_cast<int>((value >> 8) & 0xFF);
  // the messages' common head, built only when a check fails (this runs once per frame)
  auto where = [&] { return "msf[fast_wr] to MSF_RX_THREAD_FREELIST_BASE+" + std::to_string(list); };
  if (value >> 16) {
    throw MediaFault(where() + ": value " + hex(value) + " has bits above 15 set; expected (sig << 8) | xfer");
  }
  if (sig < 1 || sig > kMaxSignal) {
    throw MediaFault(where() + ": signal " + std::to_string(sig) + " out of range 1.." +
                     std::to_string(kMaxSignal) + "; expected value (sig << 8) | xfer");
  }
  if (xfer + 1 >= kXferLimit) {
    throw MediaFault(where() + ": transfer register $" + std::to_string(xfer) +
                     " leaves no room for the two status words (use $0..$" +
                     std::to_string(kXferLimit - 2) + ")");
  }
  bool served = false;
  for (const Port& p : ports_) served = served || p.cfg.rx_freelist == list;
  if (!served) {
    throw MediaFault(where() + ": no port is served by receive-thread freelist " + std::to_string(list) +
                     " (check the ports' rx_freelist)");
  }
  RxThread thread{me, ctx, xfer, sig, t};
  auto& frames = frames_waiting_[list];
  if (!frames.empty()) {
    WaitingMpacket m = frames.front();
    frames.pop_front();
    --ports_[m.port].rx_waiting;
    pair(m, thread);
    return;
  }
  threads_waiting_[list].push_back(thread);
}

void Media::element_done(uint32_t value, uint64_t t) {
  const uint32_t first = value & 0xFFFF;
  const uint32_t count = value >> 16;
  auto where = [&] { return "msf[fast_wr] to MSF_RBUF_ELEMENT_DONE (value " + hex(value) + ")"; };
  if (first >= rbuf_state_.size()) {
    throw MediaFault(where() + ": element " + std::to_string(first) + " is outside the RBUF (" +
                     std::to_string(rbuf_state_.size()) + " elements)");
  }
  const int partition = static_cast<int>(first) / rx_elements_;
  if (count < 1 || count > static_cast<uint32_t>(rx_elements_)) {
    throw MediaFault(where() + ": element count " + std::to_string(count) + " out of range 1.." +
                     std::to_string(rx_elements_) + "; expected element | (1 << 16)");
  }
  const int base = partition * rx_elements_;
  const int rel = static_cast<int>(first) - base;
  // Check all before freeing any: a fault leaves the RBUF unchanged.
  for (uint32_t j = 0; j < count; ++j) {
    const int e = base + (rel + static_cast<int>(j)) % rx_elements_;
    if (rbuf_state_[e] != RbufState::kHanded) {
      throw MediaFault(where() + ": RBUF element " + std::to_string(e) + " (partition " +
                       std::to_string(partition) + ") is " +
                       (rbuf_state_[e] == RbufState::kFree ? "not in use"
                                                           : "not yet handed to a receive thread") +
                       "; free only the element named in your autopushed status word 1");
    }
  }
  RxPartition& part = partitions_[partition];
  for (uint32_t j = 0; j < count; ++j) {
    const int e = base + (rel + static_cast<int>(j)) % rx_elements_;
    rbuf_state_[e] = RbufState::kFree;
    if (log_) [[unlikely]] log_->element_free(e, t);
    part.free.push_back(e);  // freed elements are reused last (FIFO freelist)
    --counters_[rbuf_port_[e]].rbuf_elements_in_use;
  }
  part.in_use -= count;
  // flow control released: a stalled mpacket of this partition completes now (or at its
  // wire time, if that is later); ports compete in port order at that cycle
  for (Port& q : ports_) {
    if (q.rx_stalled && q.rx_partition == partition) {
      q.rx_stalled = false;
      q.rx_pending.front().next_time = std::max(q.rx_pending.front().next_time, std::max(t, now_));
    }
  }
}

void Media::fast_wr(int me, int ctx, uint32_t csr, uint32_t value, uint64_t t) {
  next_valid_ = false;
  if (csr >= kFreelistBase && csr < kFreelistBase + kFreelists) {
    register_thread(me, ctx, static_cast<int>(csr - kFreelistBase), value, t);
  } else if (csr == kElementDone) {
    element_done(value, t);
  } else {
    throw MediaFault("msf[fast_wr]: unknown MSF CSR " + hex(csr) +
                     " (MSF_RX_THREAD_FREELIST_BASE+n = " + hex(kFreelistBase) + ".." +
                     hex(kFreelistBase + kFreelists - 1) + ", MSF_RBUF_ELEMENT_DONE = " +
                     hex(kElementDone) + ")");
  }
}

// ------------------------------------------------------------------------ buffers
int Media::rx_partition_of_byte(uint32_t byte, const char* what) const {
  const uint64_t partition = static_cast<uint64_t>(rx_elements_) * cfg_.element_bytes;
  const uint64_t parts = partitions_.size();
  if (partition == 0 || byte >= partition * parts) {
    throw MediaFault(std::string(what) + ": RBUF byte address " + hex(byte) +
                     " is outside the RBUF partitions (RBUF " + std::to_string(partition * parts) +
                     " bytes in use)");
  }
  return static_cast<int>(byte / partition);
}

int Media::tx_port_of_byte(uint32_t byte, const char* what) const {
  const uint64_t partition = static_cast<uint64_t>(tx_elements_) * cfg_.element_bytes;
  if (partition == 0 || byte >= partition * num_ports()) {
    throw MediaFault(std::string(what) + ": TBUF byte address " + hex(byte) +
                     " is outside the port partitions (TBUF " + std::to_string(partition * num_ports()) +
                     " bytes in use)");
  }
  return static_cast<int>(byte / partition);
}

void Media::rbuf_copy_out(uint32_t rbuf_addr, uint8_t* dst, size_t n) const {
  const int index = rx_partition_of_byte(rbuf_addr, "RBUF read");
  const size_t partition = static_cast<size_t>(rx_elements_) * cfg_.element_bytes;
  if (n > partition) {
    throw MediaFault("RBUF read of " + std::to_string(n) + " bytes is larger than the partition (" +
                     std::to_string(partition) + " bytes)");
  }
  const size_t base = static_cast<size_t>(index) * partition;
  size_t off = rbuf_addr - base;
  const size_t first_part = std::min(n, partition - off);
  std::memcpy(dst, rbuf_.data() + base + off, first_part);
  std::memcpy(dst + first_part, rbuf_.data() + base, n - first_part);  // wrap in the partition
}

void Media::tbuf_copy_in(uint32_t tbuf_addr, const uint8_t* src, size_t n) {
  // moves bytes only: no event changes, the next_event() cache stays valid
  const int port = tx_port_of_byte(tbuf_addr, "TBUF write");
  const size_t partition = static_cast<size_t>(tx_elements_) * cfg_.element_bytes;
  if (n > partition) {
    throw MediaFault("TBUF write of " + std::to_string(n) + " bytes is larger than the port partition (" +
                     std::to_string(partition) + " bytes)");
  }
  const size_t base = static_cast<size_t>(port) * partition;
  size_t off = tbuf_addr - base;
  const size_t first_part = std::min(n, partition - off);
  std::memcpy(tbuf_.data() + base + off, src, first_part);
  std::memcpy(tbuf_.data() + base, src + first_part, n - first_part);
}

void Media::read(uint32_t addr, uint32_t* out, int nwords, uint64_t) {
  // reads only: the next_event() cache stays valid (transmit threads poll TX_SEQUENCE)
  if (nwords < 1) throw MediaFault("msf[read]: word count must be at least 1");
  if (addr % 4 != 0) throw MediaFault("msf[read]: address " + hex(addr) + " is not longword aligned");
  if (addr >= kRbufBase && addr < kTbufBase) {
    SmallBytes bytes(static_cast<size_t>(nwords) * 4);
    rbuf_copy_out(addr - kRbufBase, bytes.data(), bytes.size());
    for (int i = 0; i < nwords; ++i) {
      const uint8_t* b = bytes.data() + 4 * i;
      out[i] = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    }
    return;
  }
  if (addr >= kTxSequenceBase) {
    const uint32_t port0 = (addr - kTxSequenceBase) / 4;
    if (port0 + static_cast<uint32_t>(nwords) > static_cast<uint32_t>(num_ports())) {
      throw MediaFault("msf[read]: MSF_TX_SEQUENCE_BASE+" + hex(addr - kTxSequenceBase) + ", " +
                       std::to_string(nwords) + " words: only ports 0.." +
                       std::to_string(num_ports() - 1) + " exist");
    }
    for (int i = 0; i < nwords; ++i) out[i] = ports_[port0 + i].tx_sequence;
    return;
  }
  throw MediaFault("msf[read]: address " + hex(addr) +
                   " is not readable (RBUF at MSF_RBUF_BASE, TX sequence at MSF_TX_SEQUENCE_BASE + 4*port)");
}

void Media::write(uint32_t addr, const uint32_t* in, int nwords, uint64_t t) {
  next_valid_ = false;
  if (nwords < 1) throw MediaFault("msf[write]: word count must be at least 1");
  if (addr % 4 != 0) throw MediaFault("msf[write]: address " + hex(addr) + " is not longword aligned");
  if (addr >= kTbufBase && addr < kTbufCtlBase) {
    SmallBytes bytes(static_cast<size_t>(nwords) * 4);
    for (int i = 0; i < nwords; ++i) {
      bytes[4 * i] = static_cast<uint8_t>(in[i] >> 24);
      bytes[4 * i + 1] = static_cast<uint8_t>(in[i] >> 16);
      bytes[4 * i + 2] = static_cast<uint8_t>(in[i] >> 8);
      bytes[4 * i + 3] = static_cast<uint8_t>(in[i]);
    }
    tbuf_copy_in(addr - kTbufBase, bytes.data(), bytes.size());
    return;
  }
  if (addr >= kTbufCtlBase && addr < kTxSequenceBase) {
    for (int i = 0; i < nwords; ++i) write_control((addr - kTbufCtlBase) / 4 + i, in[i], t);
    return;
  }
  throw MediaFault("msf[write]: address " + hex(addr) +
                   " is not writable (TBUF at MSF_TBUF_BASE, control words at MSF_TBUF_CTL_BASE + 4*element)");
}

// ------------------------------------------------------------------------ transmit
// The HRM's TBUF (IXP2800 HRM, chapter 8, the MSF's transmit side): the MSF sends a port's
// TBUF elements in order, one mpacket per element, each made valid by its own control word
// (SOP/EOP and the bytes it holds), and frees each element -- TX_SEQUENCE counts it -- when
// its bytes have left, so a frame longer than the partition streams through it.

// An element may not be written while its control word is waiting or its bytes are on the
// wire.
bool Media::tx_element_busy(const Port& p, int rel) const {
  return p.tx_slots[rel].valid || (p.tx_busy && p.tx_busy_element == rel);
}

void Media::write_control(uint32_t element, uint32_t word, uint64_t t) {
  auto where = [&] {
    return "msf[write] TBUF control word " + hex(word) + " for element " + std::to_string(element);
  };
  const uint32_t length = word & tx_control::kLengthMask;
  const uint32_t port = (word >> tx_control::kPortShift) & tx_control::kPortMask;
  const bool sop = (word & tx_control::kSop) != 0;
  const bool eop = (word & tx_control::kEop) != 0;
  if (word >> tx_control::kReservedShift) {
    throw MediaFault(where() + ": bits 31..26 must be 0 (length | port << 16 | SOP << 24 | EOP << 25)");
  }
  if (port >= static_cast<uint32_t>(num_ports())) {
    throw MediaFault(where() + ": no port " + std::to_string(port));
  }
  Port& p = ports_[port];
  const int rel = static_cast<int>(element) - p.tx_first;
  if (rel < 0 || rel >= tx_elements_) {
    throw MediaFault(where() + ": element is outside port " + std::to_string(port) +
                     "'s TBUF partition (elements " + std::to_string(p.tx_first) + ".." +
                     std::to_string(p.tx_first + tx_elements_ - 1) + ")");
  }
  const uint32_t eb = static_cast<uint32_t>(cfg_.element_bytes);
  if (length == 0 || length > eb) {
    throw MediaFault(where() + ": length " + std::to_string(length) + " is not 1.." + std::to_string(eb) +
                     ": a control word names the bytes of its own element (one word per element, "
                     "SOP on the first, EOP on the last)");
  }
  if (!eop && length != eb) {
    throw MediaFault(where() + ": an element without EOP must be full (" + std::to_string(eb) +
                     " bytes); only the frame's last element (EOP) may be shorter");
  }
  if (tx_element_busy(p, rel)) {
    throw MediaFault(where() + ": element " + std::to_string(element) +
                     " is still queued or being transmitted; wait until TX_SEQUENCE shows it free");
  }
  // Frame boundaries: an element starts a frame (SOP) exactly when the element before it in
  // the ring's order ended one (EOP).  Checked against whichever neighbour is already known,
  // so every pair is checked when its second element is written.
  const int prev = (rel + tx_elements_ - 1) % tx_elements_;
  const int next = (rel + 1) % tx_elements_;
  // (at the transmitter's next position the element before it is the one it took last)
  const bool prev_known = rel == p.tx_next || p.tx_slots[prev].valid;
  const bool prev_eop = rel == p.tx_next ? p.tx_last_eop : p.tx_slots[prev].eop;
  if (prev_known && prev_eop != sop) {
    throw MediaFault(where() + (sop ? ": SOP, but the element before it does not end a frame (no EOP)"
                                    : ": no SOP, but the element before it ends a frame (EOP)"));
  }
  if (next != p.tx_next && p.tx_slots[next].valid && p.tx_slots[next].sop != eop) {
    throw MediaFault(where() + (eop ? ": EOP, but the element after it does not start a frame (no SOP)"
                                    : ": no EOP, but the element after it starts a frame (SOP)"));
  }
  TxSlot& slot = p.tx_slots[rel];
  slot.valid = true;
  slot.sop = sop;
  slot.eop = eop;
  slot.length = static_cast<int>(length);
  slot.valid_cycle = t;
  if (log_) [[unlikely]] log_->tbuf_valid(p.tx_first + rel, word, t);
  counters_[port].tbuf_elements_queued += 1;
  try_start_tx(p, static_cast<int>(port));
}

// Send the next element if the line is free and its control word is valid.  A frame's first
// mpacket (SOP) starts after the previous frame (back to back) and not before its word was
// written; a later mpacket follows the one before it, or -- underrun -- starts when its word
// is written: the MSF waits for the element (Decision, U: a framer whose FIFO runs dry would
// abort the frame on the wire; the model keeps the frame whole and counts tx_underruns).
// The port's per-frame overhead is counted after the EOP mpacket, so with every element in
// time a frame of L bytes takes (L + overhead) x 8 / rate, as a whole frame did.
void Media::try_start_tx(Port& p, int port_index) {
  if (p.tx_busy) return;
  TxSlot& slot = p.tx_slots[p.tx_next];
  if (!slot.valid) return;
  const u128 written = static_cast<u128>(slot.valid_cycle) * p.clock.den;
  const u128 start = std::max(p.tx_line_free, written);
  if (slot.sop) {
    p.tx_in_frame = true;
    p.tx_current = TxFrame{};
    p.tx_current.port = port_index;
    p.tx_current.first_bit_cycle = cycle_ceil(p, start);
  } else if (written > p.tx_line_free) {
    ++counters_[port_index].tx_underruns;
  }
  const size_t length = static_cast<size_t>(slot.length);
  if (p.tx_current.bytes.size() + length > tx_control::kMaxFrame) {
    throw MediaFault("TBUF port " + std::to_string(port_index) + ": a frame longer than " +
                     std::to_string(tx_control::kMaxFrame) + " bytes (no EOP in time)");
  }
  u128 end = start + static_cast<u128>(length) * 8u * p.clock.num;
  if (slot.eop) end += static_cast<u128>(p.cfg.overhead_bytes) * 8u * p.clock.num;
  // the bytes are taken from the TBUF when the element's transmission starts
  const uint8_t* bytes = tbuf_.data() + static_cast<size_t>(p.tx_first + p.tx_next) * cfg_.element_bytes;
  p.tx_current.bytes.insert(p.tx_current.bytes.end(), bytes, bytes + length);
  p.tx_line_free = end;
  p.tx_busy = true;
  p.tx_busy_element = p.tx_next;
  p.tx_busy_end = cycle_ceil(p, end);
  p.tx_last_eop = slot.eop;
  p.tx_next = (p.tx_next + 1) % tx_elements_;
  slot.valid = false;
}

// The mpacket on the wire has left: its element is free (TX_SEQUENCE counts it); at EOP the
// frame is done.
void Media::depart(Port& p, int port_index) {
  PortCounters& c = counters_[port_index];
  p.tx_busy = false;
  p.tx_sequence += 1;
  c.tx_elements += 1;
  c.tbuf_elements_queued -= 1;
  // the frame log: an element leaves (its tag goes), a frame at its EOP element
  if (log_) [[unlikely]]
    log_->departure(port_index, p.tx_first + p.tx_busy_element, p.tx_current.first_bit_cycle,
                    p.tx_busy_end, p.tx_last_eop);
  if (p.tx_last_eop) {  // the element on the wire was the last one taken
    p.tx_in_frame = false;
    p.tx_current.last_bit_cycle = p.tx_busy_end;
    c.tx_frames += 1;
    tx_frames_total_ += 1;
    c.tx_bytes += p.tx_current.bytes.size();
    tx_done_.push_back(std::move(p.tx_current));
    p.tx_current = TxFrame{};
  }
  try_start_tx(p, port_index);
}

}  // namespace npkit
