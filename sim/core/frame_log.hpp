// The per-frame event log and the utilisation probe: observation only, off unless the host
// asks (Chip::set_frame_log).  With no log every hook is one null-pointer test on a per-frame
// or per-command path (none per instruction), and nothing it records changes the simulation.
//
// How a frame is followed (docs/debugging.md, "Per-packet traces"):
//   * the media numbers frames as the host adds them (a global id and the port's own
//     sequence number) and tags each RBUF element with the frame whose mpacket it holds;
//   * a context *carries* a frame from the autopush of one of the frame's elements, or from
//     an msf[read] / dram[rbuf_rd] of such an element, or from a scratch ring get of words a
//     carrying context put; every command the context issues while carrying is the frame's;
//   * ring words are tagged per ring slot at the put and untagged at the get; a get that
//     finds the ring short drops the carry, as does an autopush of an untagged element;
//   * the first word of a tagged ring entry, and a handle a carrying context dequeues from
//     an SRAM queue (a buffer from its freelist), is remembered with its frame until it is
//     put on a ring -- by any context: a receive thread may put its handle after the next
//     autopush, a context may pass several handles in one ordered turn -- or enqueued on an
//     SRAM queue again (the buffer back on its freelist); a put of such a word goes with
//     that frame, any other put with the frame the context carries;
//   * a TBUF element written (msf[write], dram[tbuf_wr]) by a carrying context belongs to
//     the frame; its control word and its departure are the frame's.
// What it cannot follow: a frame passed between contexts by any other means (SRAM queues,
// next-neighbour rings, shared memory words) -- the commands are still logged under the
// context's last carried frame until the context picks up a tagged element or ring word.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "isa_gen.hpp"

namespace npkit {

enum class FrameEventKind : uint8_t {
  Arrival = 0,     // on the wire: a: port, b: port sequence number, c: length (bytes),
                   // cycle: first bit, end: last bit
  Element = 1,     // an mpacket stored: a: RBUF element, b: mpacket index, c: sop | eop << 1
  RbufDrop = 2,    // dropped at the RBUF (no free element for its first mpacket): a: port
  Autopush = 3,    // status pushed to (me, ctx): a: element
  ElementFree = 4, // RBUF_ELEMENT_DONE: a: element
  Command = 5,     // a command issued by a context carrying the frame: unit, op (opcode),
                   // sub, a: address, b: first data word, end: completion cycle
  RingPut = 6,     // a: ring, b: first word
  RingGet = 7,     // a: ring, b: first word
  TbufWrite = 8,   // a: TBUF element
  TbufValid = 9,   // an element's control word written: a: TBUF element, b: the word
  Departure = 10,  // a: port, b: its last (EOP) TBUF element, cycle: first bit, end: last bit
  TracePoint = 11, // a context carrying the frame retired the instruction at pc
};

// One event, 40 bytes; the Python side reads the array as a numpy structured array with
// this exact layout (sim/packet_trace.py, EVENT_DTYPE).
struct FrameEvent {
  uint64_t cycle;
  uint64_t end;
  uint32_t frame;
  uint32_t a;
  uint32_t b;
  uint32_t pc;
  int8_t me;
  int8_t ctx;
  uint8_t kind;
  uint8_t unit;
  uint8_t op;
  uint8_t sub;
  uint16_t c;
};
static_assert(sizeof(FrameEvent) == 40, "FrameEvent layout is shared with sim/packet_trace.py");

struct FrameLogConfig {
  bool frames = true;               // record per-frame events (else: utilisation only)
  uint64_t max_events = 1u << 20;   // stop recording at this many events
  uint32_t first = 0;               // selection: port sequence numbers [first, last)
  uint32_t last = UINT32_MAX;
  uint64_t port_mask = ~0ULL;       // selection: ports (bit p)
  uint32_t sample_every = 1;        // selection: every n-th frame of a port (by sequence)
  int bucket_shift = 10;            // utilisation series: 2^shift cycles per bucket
  bool waits = false;               // record each sleeping interval's unit (take_waits)
};

// Unit numbers of the utilisation probe: 0 a signal from another thread or the host,
// 1 the media (autopush), 2 MSF commands, 3 scratch, 4 hash, 5.. SRAM channels, then DRAM.
inline constexpr uint8_t kUnitOther = 0, kUnitMedia = 1, kUnitMsf = 2, kUnitScratch = 3,
                         kUnitHash = 4, kUnitSram0 = 5;

class FrameLog {
 public:
  FrameLog(FrameLogConfig cfg, int mes, int sram_channels, int dram_channels, int rbuf_elements,
           int tbuf_elements)
      : cfg_(cfg),
        mes_(mes),
        sram_(sram_channels),
        dram_(dram_channels),
        rbuf_frame_(static_cast<size_t>(std::max(rbuf_elements, 0)), kNone),
        tbuf_frame_(static_cast<size_t>(std::max(tbuf_elements, 0)), kNone),
        carried_(static_cast<size_t>(mes) * 8, kNone),
        sig_unit_(static_cast<size_t>(mes) * 8),
        sig_done_(static_cast<size_t>(mes) * 8),
        me_wait_(static_cast<size_t>(mes) * 16, 0),
        ctx_wait_(static_cast<size_t>(mes) * 8 * 16, 0),
        backlog_(static_cast<size_t>(units())) {
    for (auto& s : sig_unit_) s.fill(kUnitOther);
    for (auto& s : sig_done_) s.fill(0);
  }

  static constexpr uint32_t kNone = UINT32_MAX;
  const FrameLogConfig& config() const { return cfg_; }
  int units() const { return kUnitSram0 + sram_ + dram_; }
  uint8_t sram_unit(int ch) const { return static_cast<uint8_t>(kUnitSram0 + ch); }
  uint8_t dram_unit(int ch) const { return static_cast<uint8_t>(kUnitSram0 + sram_ + ch); }
  std::string unit_name(int u) const {
    static const char* fixed[] = {"signal", "media", "msf", "scratch", "hash"};
    if (u < kUnitSram0) return fixed[u];
    if (u < kUnitSram0 + sram_) return "sram" + std::to_string(u - kUnitSram0);
    return "dram" + std::to_string(u - kUnitSram0 - sram_);
  }

  // ---------------------------------------------------------------- media side
  // A frame added by the host: its global id (the media numbers them) and port sequence.
  bool selected(int port, uint32_t seq) const {
    return cfg_.frames && port >= 0 && port < 64 && ((cfg_.port_mask >> port) & 1) &&
           seq >= cfg_.first && seq < cfg_.last && (seq - cfg_.first) % cfg_.sample_every == 0;
  }
  void arrival(uint32_t id, int port, uint32_t seq, uint32_t length, uint64_t first_bit,
               uint64_t last_bit) {
    if (!selected(port, seq)) return;
    if (followed_.size() <= id) followed_.resize(id + 1, false);
    followed_[id] = true;
    FrameEvent& e = push(FrameEventKind::Arrival, id, first_bit);
    e.end = last_bit;
    e.a = static_cast<uint32_t>(port);
    e.b = seq;
    e.c = static_cast<uint16_t>(length);
  }
  void element(uint32_t id, int element, int mpacket, bool sop, bool eop, uint64_t t) {
    rbuf_frame_[static_cast<size_t>(element)] = id;
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::Element, id, t);
    e.a = static_cast<uint32_t>(element);
    e.b = static_cast<uint32_t>(mpacket);
    e.c = static_cast<uint16_t>((sop ? 1 : 0) | (eop ? 2 : 0));
  }
  void rbuf_drop(uint32_t id, int port, uint64_t t) {
    if (!followed(id)) return;
    push(FrameEventKind::RbufDrop, id, t).a = static_cast<uint32_t>(port);
  }
  void autopush(int element, int me, int ctx, uint64_t t) {
    const uint32_t id = rbuf_frame_[static_cast<size_t>(element)];
    carried_[slot(me, ctx)] = id;
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::Autopush, id, t);
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.a = static_cast<uint32_t>(element);
  }
  void element_free(int element, uint64_t t) {
    const uint32_t id = rbuf_frame_[static_cast<size_t>(element)];
    if (!followed(id)) return;
    push(FrameEventKind::ElementFree, id, t).a = static_cast<uint32_t>(element);
  }
  void tbuf_valid(int element, uint32_t word, uint64_t t) {
    const uint32_t id = tbuf_frame_[static_cast<size_t>(element)];
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::TbufValid, id, t);
    e.a = static_cast<uint32_t>(element);
    e.b = word;
  }
  // TBUF element `element` has left the wire; `eop`: it ended its frame, which left from
  // first_bit to last_bit (the model sends a frame element by element)
  void departure(int port, int element, uint64_t first_bit, uint64_t last_bit, bool eop) {
    const uint32_t id = tbuf_frame_[static_cast<size_t>(element)];
    tbuf_frame_[static_cast<size_t>(element)] = kNone;
    if (!eop || !followed(id)) return;
    FrameEvent& e = push(FrameEventKind::Departure, id, first_bit);
    e.end = last_bit;
    e.a = static_cast<uint32_t>(port);
    e.b = static_cast<uint32_t>(element);
  }

  // ---------------------------------------------------------------- ME side
  // A command issued at `t` by (me, ctx) at `pc`, on `unit`, completing at `done`;
  // `backlog` cycles of work were queued on the unit including this command.
  void command(int me, int ctx, uint32_t pc, uint8_t unit, uint8_t op, uint8_t sub, int sig,
               uint32_t addr, uint32_t word, uint64_t t, uint64_t done, uint64_t backlog) {
    if (sig > 0 && sig < 16) {
      sig_unit_[slot(me, ctx)][static_cast<size_t>(sig)] = unit;
      sig_done_[slot(me, ctx)][static_cast<size_t>(sig)] = done;
    }
    const uint32_t id = carried_[slot(me, ctx)];
    if (op == isa::OP_SRAM && sub == isa::sram_cmds::ENQUEUE) held_.erase(word);
    if (op == isa::OP_SRAM && sub == isa::sram_cmds::DEQUEUE && id != kNone && word != 0) hold(word, id);
    Bucket& b = bucket(unit, t);
    b.commands += 1;
    b.max_backlog = std::max(b.max_backlog, static_cast<uint32_t>(std::min<uint64_t>(backlog, UINT32_MAX)));
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::Command, id, t);
    e.end = done;
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.pc = pc;
    e.unit = unit;
    e.op = op;
    e.sub = sub;
    e.a = addr;
    e.b = word;
  }
  // (me, ctx) now carries the frame held in RBUF element `element` (it read the element)
  void rbuf_read(int me, int ctx, int element) {
    if (element >= 0 && static_cast<size_t>(element) < rbuf_frame_.size())
      carried_[slot(me, ctx)] = rbuf_frame_[static_cast<size_t>(element)];
  }
  void tbuf_write(int me, int ctx, int element, uint64_t t) {
    if (element < 0 || static_cast<size_t>(element) >= tbuf_frame_.size()) return;
    const uint32_t id = carried_[slot(me, ctx)];
    tbuf_frame_[static_cast<size_t>(element)] = id;
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::TbufWrite, id, t);
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.a = static_cast<uint32_t>(element);
  }
  // `count` words put at ring slots start.. (mod size).  A first word the context took from
  // a ring earlier names the frame it came with (a context that batches handles puts
  // several); any other word goes with the frame the context carries.
  void ring_put(int me, int ctx, uint32_t ring, uint32_t start, uint32_t size, int count,
                uint32_t word, uint64_t t) {
    uint32_t id = carried_[slot(me, ctx)];
    auto held = held_.find(word);
    if (held != held_.end()) {
      id = held->second;
      held_.erase(held);
    }
    auto& tags = ring_tags(ring, size);
    for (int k = 0; k < count; ++k) tags[(start + static_cast<uint32_t>(k)) % size] = id;
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::RingPut, id, t);
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.a = ring;
    e.b = word;
  }
  // a get of `count` words from slots start..; count 0: the ring was short (no words)
  void ring_get(int me, int ctx, uint32_t ring, uint32_t start, uint32_t size, int count,
                uint32_t word, uint64_t t) {
    uint32_t id = kNone;
    if (count > 0) {
      auto& tags = ring_tags(ring, size);
      id = tags[start % size];
      for (int k = 0; k < count; ++k) tags[(start + static_cast<uint32_t>(k)) % size] = kNone;
      if (id != kNone) hold(word, id);
    }
    carried_[slot(me, ctx)] = id;
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::RingGet, id, t);
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.a = ring;
    e.b = word;
  }
  void media_registration(int me, int ctx, int sig) {
    if (sig > 0 && sig < 16) sig_unit_[slot(me, ctx)][static_cast<size_t>(sig)] = kUnitMedia;
  }

  // A sleeping context woke at `t` on the signals `got`, having slept since `since`; its ME
  // was at `me_time`, with nothing to run when `me_idle` (then idle from me_time until t).
  // The sleeping interval ends where Chip::set_state ends it: max(t, me_time, since).
  void woke(int me, int ctx, uint16_t got, uint64_t since, uint64_t me_time, bool me_idle,
            uint64_t t) {
    const size_t s = slot(me, ctx);
    uint8_t unit = kUnitOther;
    uint64_t latest = 0;
    for (int g = 1; g < 16; ++g)
      if ((got >> g) & 1) {
        if (unit == kUnitOther || sig_done_[s][static_cast<size_t>(g)] >= latest) {
          unit = sig_unit_[s][static_cast<size_t>(g)];
          latest = sig_done_[s][static_cast<size_t>(g)];
        }
      }
    const uint64_t end = std::max({t, me_time, since});
    ctx_wait_[s * 16 + unit] += end - since;
    if (me_idle && me_time < t) me_wait_[static_cast<size_t>(me) * 16 + unit] += t - me_time;
    if (cfg_.waits && end > since) waits_.push_back(Wait{end, static_cast<int16_t>(me),
                                                         static_cast<uint8_t>(ctx), unit, 0});
  }
  // Sleeping intervals that ended, with the unit each waited on (cfg.waits): the thread
  // timeline names its "sleeping" spans by them.
  struct Wait {
    uint64_t end;
    int16_t me;
    uint8_t ctx;
    uint8_t unit;
    uint32_t pad;
  };
  std::vector<Wait> take_waits() {
    std::vector<Wait> out;
    out.swap(waits_);
    return out;
  }
  // a context carrying a frame retired a trace-point instruction
  void trace_point(int me, int ctx, uint32_t pc, uint64_t t) {
    const uint32_t id = carried_[slot(me, ctx)];
    if (!followed(id)) return;
    FrameEvent& e = push(FrameEventKind::TracePoint, id, t);
    e.me = static_cast<int8_t>(me);
    e.ctx = static_cast<int8_t>(ctx);
    e.pc = pc;
  }

  // ---------------------------------------------------------------- results
  std::vector<FrameEvent> take_events() {
    std::vector<FrameEvent> out;
    out.swap(events_);
    return out;
  }
  uint64_t recorded() const { return recorded_; }
  uint64_t lost() const { return lost_; }           // events not recorded (cap reached)
  uint64_t full_at() const { return full_at_; }     // cycle of the first lost event
  uint64_t me_wait(int me, int unit) const { return me_wait_[static_cast<size_t>(me) * 16 + unit]; }
  uint64_t ctx_wait(int me, int ctx, int unit) const { return ctx_wait_[slot(me, ctx) * 16 + unit]; }
  struct Bucket {
    uint32_t commands = 0;
    uint32_t max_backlog = 0;
  };
  const std::vector<Bucket>& backlog(int unit) const { return backlog_[static_cast<size_t>(unit)]; }

 private:
  static constexpr size_t kMaxHeld = 1u << 16;
  void hold(uint32_t word, uint32_t id) {
    if (held_.size() > kMaxHeld) held_.clear();  // words never put again: forget them
    held_[word] = id;
  }
  size_t slot(int me, int ctx) const { return static_cast<size_t>(me) * 8 + static_cast<size_t>(ctx); }
  bool followed(uint32_t id) const { return id != kNone && id < followed_.size() && followed_[id]; }
  FrameEvent& push(FrameEventKind kind, uint32_t id, uint64_t t) {
    if (recorded_ >= cfg_.max_events) {
      if (lost_++ == 0) full_at_ = t;
      scratch_ = FrameEvent{};
      return scratch_;  // written and thrown away
    }
    ++recorded_;
    FrameEvent& e = events_.emplace_back();
    e = FrameEvent{};
    e.cycle = t;
    e.end = t;
    e.frame = id;
    e.me = -1;
    e.ctx = -1;
    e.kind = static_cast<uint8_t>(kind);
    return e;
  }
  std::vector<uint32_t>& ring_tags(uint32_t ring, uint32_t size) {
    auto& tags = rings_[ring];
    if (tags.size() != size) tags.assign(size, kNone);
    return tags;
  }
  Bucket& bucket(uint8_t unit, uint64_t t) {
    auto& series = backlog_[unit];
    const size_t i = static_cast<size_t>(t >> cfg_.bucket_shift);
    if (series.size() <= i) series.resize(i + 1);
    return series[i];
  }

  FrameLogConfig cfg_;
  int mes_, sram_, dram_;
  std::vector<uint32_t> rbuf_frame_, tbuf_frame_, carried_;
  std::vector<std::array<uint8_t, 16>> sig_unit_;
  std::vector<std::array<uint64_t, 16>> sig_done_;
  std::vector<uint64_t> me_wait_, ctx_wait_;
  std::vector<std::vector<Bucket>> backlog_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> rings_;
  std::unordered_map<uint32_t, uint32_t> held_;  // first word of a tagged ring entry -> frame
  std::vector<bool> followed_;
  std::vector<FrameEvent> events_;
  std::vector<Wait> waits_;
  FrameEvent scratch_{};
  uint64_t recorded_ = 0, lost_ = 0, full_at_ = 0;
};

}  // namespace npkit
