// The media interface of the simulated chip: the MSF (media switch fabric) with its receive
// buffer (RBUF) and transmit buffer (TBUF), the receive-thread freelists with autopush, and
// the ports at line rate.  Model and microcode protocol: docs/media.md; contract:
// docs/architecture.md, "Media (MSF, RBUF, TBUF, ports)".
//
// The model does work per frame, never per cycle: the chip asks next_event() and calls
// advance(t).  Wire time is kept exact (rational arithmetic in units of 1/den cycles per
// port), so back-to-back frames never drift from line rate however long the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <queue>
#include <stdexcept>
#include <string>
#include <vector>

namespace npkit {

class FrameLog;  // frame_log.hpp: the optional per-frame event log

struct PortConfig {
  double rate_bps;     // bits per second on the wire
  int overhead_bytes;  // bytes added per frame on the wire (10GbE: 20, OC-192 POS: 9)
  int rx_freelist;     // receive-thread freelist that serves this port
};

struct MediaConfig {
  int rbuf_bytes;
  int tbuf_bytes;
  int element_bytes;
  uint64_t autopush_latency;  // ME cycles from "frame and thread both available" to the push
  double me_clock_hz;
  std::vector<PortConfig> ports;
  // HRM: the RBUF is split into 1, 2 or 4 partitions, each with its own element freelist;
  // port p receives into partition p % partitions; 0 = one per port for 1, 2, 4 ports (3: 4),
  // one shared beyond 4 ports (docs/media.md, "RBUF partitions").
  int rbuf_partitions = 0;
};

struct TxFrame {
  int port;
  uint64_t first_bit_cycle;
  uint64_t last_bit_cycle;
  std::vector<uint8_t> bytes;
};

struct PortCounters {
  // the seam fields (docs: media.md, "Counters")
  uint64_t rx_frames = 0, rx_bytes = 0, rx_dropped_rbuf_full = 0, tx_frames = 0, tx_bytes = 0,
           rbuf_high_water_elements = 0, rx_waiting_high_water = 0;
  // extras
  uint64_t rx_dropped_too_long = 0;     // kept for the counter set: mpackets need no run, 0
  uint64_t rx_flow_control_stalls = 0;  // mpackets that waited for a free element
  uint64_t rx_handed = 0;               // frames whose last (EOP) mpacket was autopushed
  uint64_t rx_mpackets = 0;             // mpackets (one RBUF element each) autopushed
  uint64_t rbuf_partition_high_water = 0;  // most elements in use at once in the port's partition
  uint64_t rbuf_elements_in_use = 0;    // gauge: RBUF elements not yet freed (leak check)
  uint64_t tbuf_elements_queued = 0;    // gauge: TBUF elements valid or being transmitted
  uint64_t tx_elements = 0;             // TX elements transmitted (TX_SEQUENCE without wrap)
  uint64_t tx_underruns = 0;            // mpackets of a started frame not valid in time
};

class MediaFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MediaHost {  // implemented by the chip
 public:
  virtual ~MediaHost() = default;
  // write n status words into SRAM-in transfer registers xfer..xfer+n-1 of (me, ctx) and
  // raise signal sig, at cycle `when`
  virtual void autopush(int me, int ctx, int xfer, const uint32_t* words, int n, int sig,
                        uint64_t when) = 0;
};

// Layout of the two receive status words autopushed per mpacket (docs/media.md, "Receive").
namespace rx_status {
inline constexpr uint32_t kLengthMask = 0xFFFF;  // word 0 bits 15..0: bytes in this mpacket
inline constexpr int kPortShift = 16;            // word 0 bits 23..16: port
inline constexpr uint32_t kSop = 1u << 24;       // word 0 bit 24: first mpacket of the frame
inline constexpr uint32_t kEop = 1u << 25;       // word 0 bit 25: last mpacket of the frame
inline constexpr uint32_t kFirstMask = 0xFFFF;   // word 1 bits 15..0: the mpacket's element
inline constexpr int kCountShift = 16;           // word 1 bits 23..16: 1 (element count, so
                                                 // word 1 is an RBUF_ELEMENT_DONE value as is)
}  // namespace rx_status

// TBUF control word, one per element (mpacket) as in the HRM's TBUF (docs/media.md,
// "Transmit"): bits 15..0 the bytes in this element, 23..16 port, 24 SOP, 25 EOP -- the
// layout of receive status word 0, so a forwarded mpacket's status can be reused as is.
namespace tx_control {
inline constexpr uint32_t kLengthMask = 0xFFFF;
inline constexpr int kPortShift = 16;
inline constexpr uint32_t kPortMask = 0xFF;
inline constexpr uint32_t kSop = 1u << 24;
inline constexpr uint32_t kEop = 1u << 25;
inline constexpr int kReservedShift = 26;  // bits 31..26 must be 0
inline constexpr uint32_t kMaxFrame = 0xFFFF;  // a frame's bytes (SOP..EOP), as on receive
}  // namespace tx_control

class Media {
 public:
  Media(MediaConfig cfg, MediaHost& host);

  // host side (Python via the chip)
  void add_rx_frame(int port, std::vector<uint8_t> bytes, int64_t not_before_cycle);
  std::vector<TxFrame> take_tx();
  // asked on every scheduler step: inline, cached until the model changes
  uint64_t next_event() const {
    if (!next_valid_) {
      next_time_ = earliest().time;
      next_valid_ = true;
    }
    return next_time_;
  }
  void advance(uint64_t t);
  bool idle() const;
  const std::vector<PortCounters>& counters() const;
  uint64_t tx_frames_total() const { return tx_frames_total_; }  // sum of the ports' tx_frames
  uint64_t rx_pending_frames() const;

  // ME commands, issued at cycle t
  void fast_wr(int me, int ctx, uint32_t csr, uint32_t value, uint64_t t);
  void read(uint32_t addr, uint32_t* out, int nwords, uint64_t t);
  void write(uint32_t addr, const uint32_t* in, int nwords, uint64_t t);
  void rbuf_copy_out(uint32_t rbuf_addr, uint8_t* dst, size_t n) const;
  void tbuf_copy_in(uint32_t tbuf_addr, const uint8_t* src, size_t n);

  // introspection (tests, docs, the chip's counters)
  int num_ports() const { return static_cast<int>(ports_.size()); }
  int rx_partition_elements() const { return rx_elements_; }  // elements per RBUF partition
  int rx_partitions() const { return static_cast<int>(partitions_.size()); }
  int tx_partition_elements() const { return tx_elements_; }
  int element_bytes() const { return cfg_.element_bytes; }
  int rx_freelists() const;  // number of receive-thread freelists (CSR slots)
  uint64_t now() const { return now_; }
  // The per-frame event log (observation only; null: off).  Not copied meaning: a copy of
  // the media (a snapshot) keeps the pointer; Chip::restore sets it again.
  void set_frame_log(FrameLog* log) { log_ = log; }

 private:
  using u128 = unsigned __int128;

  // Exact time: cycles per wire bit = num / den; port times are kept in units of 1/den cycle.
  struct WireClock {
    u128 num = 1, den = 1;
  };
  struct PendingRx {
    std::vector<uint8_t> bytes;
    u128 start;                 // first bit on the wire (units of 1/den cycle)
    uint64_t next_time;         // cycle at which the next mpacket is complete in the RBUF
    int next = 0;               // index of the next mpacket
    uint32_t id = 0;            // the frame's number: frames added before it, all ports
  };
  struct WaitingMpacket {
    int port, element, length;
    bool sop, eop;
    uint64_t arrival;
  };
  struct RxPartition {
    std::deque<int> free;  // the partition's element freelist (global element numbers)
    uint64_t in_use = 0, high_water = 0;
  };
  struct RxThread {
    int me, ctx, xfer, sig;
    uint64_t since;
  };
  struct Autopush {
    uint64_t when, seq;
    int me, ctx, xfer, sig;
    int port, element;
    bool eop;
    uint32_t words[2];
  };
  struct AutopushLater {
    bool operator()(const Autopush& a, const Autopush& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };
  struct TxSlot {
    bool valid = false;  // a control word is waiting here (element not yet taken)
    bool sop = false, eop = false;
    int length = 0;      // bytes in this element
    uint64_t valid_cycle = 0;
  };
  struct Port {
    PortConfig cfg;
    WireClock clock;
    // receive
    u128 rx_line_free = 0;  // end of the last scheduled frame on the wire (units)
    std::deque<PendingRx> rx_pending;
    int rx_partition = 0;     // RBUF partition the port receives into
    uint64_t rx_waiting = 0;  // mpackets waiting for a receive thread
    bool rx_stalled = false;  // the next mpacket waits for a free element (flow control)
    // transmit: the partition is a ring of elements sent strictly in order, one mpacket each
    int tx_first = 0;  // first global TBUF element of the partition
    int tx_next = 0;   // next relative element to transmit
    uint32_t tx_sequence = 0;
    u128 tx_line_free = 0;  // end of the last mpacket on the wire (units)
    std::vector<TxSlot> tx_slots;
    bool tx_busy = false;         // an mpacket is on the wire
    int tx_busy_element = 0;      // ... in this relative element
    uint64_t tx_busy_end = 0;     // cycle its last byte (EOP: the frame's last bit) has left
    bool tx_in_frame = false;     // SOP taken, EOP not yet
    bool tx_last_eop = true;      // the element last taken (the one on the wire, if any) was
                                  // an EOP, or none was taken yet
    TxFrame tx_current;           // the frame being sent (bytes so far)
  };
  enum class RbufState : uint8_t { kFree, kWaiting, kHanded };
  enum class EventKind { kNone, kTxDeparture, kRxArrival, kAutopush };
  struct Event {
    uint64_t time;
    EventKind kind;
    int port;
  };

  Event earliest() const;
  void arrive(Port& p, int port_index);
  void pop_rx_frame(Port& p, uint64_t t);
  void depart(Port& p, int port_index);
  void deliver_autopush();
  void try_start_tx(Port& p, int port_index);
  bool tx_element_busy(const Port& p, int rel) const;
  void pair(const WaitingMpacket& m, const RxThread& thread);
  uint64_t mpacket_time(const Port& p, const PendingRx& f) const;
  void register_thread(int me, int ctx, int list, uint32_t value, uint64_t t);
  void element_done(uint32_t value, uint64_t t);
  void write_control(uint32_t element, uint32_t word, uint64_t t);
  int rx_partition_of_byte(uint32_t byte, const char* what) const;
  int tx_port_of_byte(uint32_t byte, const char* what) const;
  uint64_t cycle_ceil(const Port& p, u128 units) const;
  u128 wire_units(const Port& p, size_t length) const;

  MediaConfig cfg_;
  MediaHost& host_;
  std::vector<Port> ports_;
  int rx_elements_ = 0;  // elements per RBUF partition
  int tx_elements_ = 0;  // elements per port TBUF partition
  std::vector<uint8_t> rbuf_, tbuf_;
  std::vector<RbufState> rbuf_state_;
  std::vector<int> rbuf_port_;  // port whose frame holds the element (per-port counters)
  std::vector<RxPartition> partitions_;
  std::vector<std::deque<WaitingMpacket>> frames_waiting_;  // mpackets, per freelist
  std::vector<std::deque<RxThread>> threads_waiting_;     // per freelist
  std::priority_queue<Autopush, std::vector<Autopush>, AutopushLater> autopushes_;
  std::vector<TxFrame> tx_done_;
  std::vector<PortCounters> counters_;
  uint64_t tx_frames_total_ = 0;
  uint32_t frames_added_ = 0;             // frames the host added (all ports): the next id
  std::vector<uint32_t> port_frames_added_;  // per port: the next port sequence number
  FrameLog* log_ = nullptr;
  uint64_t now_ = 0;
  uint64_t seq_ = 0;
  // next_event() is asked on every scheduler step: cache it; every public method that may
  // change the model's state clears next_valid_.
  mutable uint64_t next_time_ = UINT64_MAX;
  mutable bool next_valid_ = false;
};

}  // namespace npkit
