// Memory and unit commands: sram, scratch, dram, msf, hash.  The command's effect on memory
// happens at issue (commands on one channel are served in issue order, so this is the order
// the channel would apply them); its result (transfer-in registers) and its signal arrive at
// completion = start + occupancy + latency, start = max(issue, channel free).
//
// Each command is split in two: the issue (FIFO check, operands, the context's swap), run by
// the handler, and the effect (apply_*: memory, unit, completion event).  The default
// schedule applies the effect at once; the quantum schedule records the command with the
// transfer-out words it needs (PendingCmd) and applies it at the quantum's end
// (docs/sim-core.md, "The quantum schedule").
#include <algorithm>

#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;

bool fifo_full(const Chip& chip, const ME& m) { return m.outstanding >= chip.config().command_fifo_depth; }

Event completion(const ME& m, int ci, const Insn& in) {
  Event ev;
  ev.me = static_cast<int16_t>(m.index);
  ev.ctx = static_cast<int8_t>(ci);
  ev.sig = static_cast<int8_t>(in.sig);
  ev.xfer = in.xfer == 0xFF ? 0 : in.xfer;
  ev.nwords = 0;
  ev.counts = true;
  return ev;
}

// The completion at `done`: transfer-in words and signal.
void post_done(Chip& chip, Event& ev, uint64_t done) {
  ev.time = done;
  chip.post(ev);
}

// The end: one more command outstanding; with ctx_swap the context sleeps until its
// signal.
Outcome issued(ME& m, Context& c, const Insn& in) {
  m.outstanding++;
  if (!in.flag) return Outcome::Next;
  c.wait_mask = static_cast<uint16_t>(1u << in.sig);
  c.swap_mode = ctx_arb_modes::ALL;
  return Outcome::Swap;
}

// Transfer-out word k of the command: read live from the ME (default schedule) or from the
// copy taken at issue (quantum schedule).
struct LiveOut {
  std::span<const uint32_t> file;
  const ME& m;
  int ci;
  uint8_t xfer;
  uint32_t operator()(int k) const { return file[Chip::phys(m, ci, xfer + k)]; }
};
struct SavedOut {
  const uint32_t* words;
  uint32_t operator()(int k) const { return words[k]; }
};

// Record the command for the quantum's end, with the n transfer-out words it may read.
// Inlined into each command's handler: out of line, its call with nine arguments (saved
// registers, a stack frame) was ~20 of its ~55 host instructions (callgrind, l2wire).
[[gnu::always_inline]] inline void defer(Chip& chip, const ME& m, int ci, const Insn& in, uint8_t kind, uint32_t a, uint32_t b,
           std::span<const uint32_t> file, int n) {
  PendingCmd& cmd = chip.defer_command();
  cmd.t = m.time;
  cmd.me = static_cast<int16_t>(m.index);
  cmd.ci = static_cast<int8_t>(ci);
  cmd.kind = kind;
  cmd.pc = m.ctx[ci].pc - 1;
  cmd.in = in;
  cmd.a = a;
  cmd.b = b;
  if (in.xfer == 0xFF) return;
  n = std::min(n, 32);
  const size_t p0 = Chip::phys(m, ci, in.xfer);  // word k is at p0 + k
  if (p0 + static_cast<size_t>(n) <= file.size()) {  // the usual case: no check per word
    for (int k = 0; k < n; ++k) cmd.words[k] = file[p0 + k];
    return;
  }
  for (int k = 0; k < n; ++k) cmd.words[k] = p0 + k < file.size() ? file[p0 + k] : 0;
}

// The frame log's record of a command issued at t on `u` (frame_log.hpp): its unit, the
// backlog it found (cycles until the unit is free, itself included) and the first data word.
void log_command(Chip& chip, FrameLog& log, const ME& m, int ci, uint32_t pc, const Insn& in,
                 uint8_t unit, const Unit& u, uint32_t addr, uint32_t word, uint64_t t,
                 uint64_t done) {
  const uint16_t op = in.handler == H_TRACE_POINT ? chip.trace_original(m.index, pc) : in.handler;
  const uint64_t free_at = (u.free_at_fp + 0xFFFF) >> 16;
  log.command(m.index, ci, pc, unit, op, in.sub, in.sig, addr, word, t, done,
              free_at > t ? free_at - t : 0);
}

// RBUF / TBUF element of an MSF data address, -1 outside
int rbuf_element(Chip& chip, uint32_t addr) {
  if (addr < MSF_RBUF_BASE || addr >= MSF_TBUF_BASE) return -1;
  return static_cast<int>((addr - MSF_RBUF_BASE) / static_cast<uint32_t>(chip.media_ref().element_bytes()));
}
int tbuf_element(Chip& chip, uint32_t addr) {
  if (addr < MSF_TBUF_BASE || addr >= MSF_TBUF_CTL_BASE) return -1;
  return static_cast<int>((addr - MSF_TBUF_BASE) / static_cast<uint32_t>(chip.media_ref().element_bytes()));
}

// The atomic read-modify-writes shared by SRAM and scratch; returns the old value.
template <class Cmds>
uint32_t atomic(uint32_t& word, uint32_t cmd, uint32_t operand) {
  uint32_t old = word;
  switch (cmd) {
    case Cmds::SWAP: word = operand; break;
    case Cmds::SET: case Cmds::TEST_AND_SET: word |= operand; break;
    case Cmds::CLR: case Cmds::TEST_AND_CLR: word &= ~operand; break;
    case Cmds::INCR: case Cmds::TEST_AND_INCR: word += 1; break;
    case Cmds::DECR: case Cmds::TEST_AND_DECR: word -= 1; break;
    default: word += operand; break;  // ADD, TEST_AND_ADD
  }
  return old;
}

struct SramCmds {
  static constexpr uint32_t SWAP = sram_cmds::SWAP, SET = sram_cmds::SET, TEST_AND_SET = sram_cmds::TEST_AND_SET,
                            CLR = sram_cmds::CLR, TEST_AND_CLR = sram_cmds::TEST_AND_CLR, INCR = sram_cmds::INCR,
                            TEST_AND_INCR = sram_cmds::TEST_AND_INCR, DECR = sram_cmds::DECR,
                            TEST_AND_DECR = sram_cmds::TEST_AND_DECR;
};
struct ScratchCmds {
  static constexpr uint32_t SWAP = scratch_cmds::SWAP, SET = scratch_cmds::SET,
                            TEST_AND_SET = scratch_cmds::TEST_AND_SET, CLR = scratch_cmds::CLR,
                            TEST_AND_CLR = scratch_cmds::TEST_AND_CLR, INCR = scratch_cmds::INCR,
                            TEST_AND_INCR = scratch_cmds::TEST_AND_INCR, DECR = scratch_cmds::DECR,
                            TEST_AND_DECR = scratch_cmds::TEST_AND_DECR;
};

bool returns_old(uint32_t cmd, uint32_t first_test, uint32_t swap) { return cmd == swap || cmd >= first_test; }

template <class Out>
void apply_sram(Chip& chip, ME& m, int ci, uint32_t pc, const Insn& in, uint32_t addr, uint64_t t,
                const Out& out) {
  Event ev = completion(m, ci, in);
  uint32_t nbytes = 4;
  bool write = true;
  switch (in.sub) {
    case sram_cmds::READ:
      for (int k = 0; k < in.count; ++k) ev.words[k] = chip.sram_word(addr + 4 * k);
      ev.nwords = in.count;
      nbytes = 4u * in.count;
      write = false;
      break;
    case sram_cmds::WRITE:
      for (int k = 0; k < in.count; ++k) chip.sram_word(addr + 4 * k) = out(k);
      nbytes = 4u * in.count;
      break;
    case sram_cmds::ENQUEUE: case sram_cmds::DEQUEUE: {
      uint32_t ch = (addr >> 26) & 3, q = addr & ((1u << 26) - 1);
      if ((addr >> 28) || ch >= static_cast<uint32_t>(chip.config().sram_channels) || q >= chip.config().queue_descriptors)
        fault("bad_command", "queue address " + std::to_string(addr) + " names no Q-array descriptor");
      if (in.sub == sram_cmds::ENQUEUE) {
        chip.q_enqueue(static_cast<int>(ch), q, out(0));
      } else {
        ev.words[0] = chip.q_dequeue(static_cast<int>(ch), q);
        ev.nwords = 1;
        write = false;
      }
      break;
    }
    default: {  // atomics
      uint32_t operand = in.xfer == 0xFF ? 0 : out(0);
      uint32_t old = atomic<SramCmds>(chip.sram_word(addr), in.sub, operand);
      if (returns_old(in.sub, sram_cmds::TEST_AND_SET, sram_cmds::SWAP)) {
        ev.words[0] = old;
        ev.nwords = 1;
      }
      break;
    }
  }
  Unit& unit = chip.sram_unit(addr);
  uint64_t done = unit.schedule(t, nbytes, write);
  if (FrameLog* log = chip.frame_log()) [[unlikely]]
    log_command(chip, *log, m, ci, pc, in, log->sram_unit(static_cast<int>(&unit - chip.sram_units().data())),
                unit, addr, ev.nwords ? ev.words[0] : (in.xfer == 0xFF ? 0 : out(0)), t, done);
  post_done(chip, ev, done);
}

template <class Out>
void apply_scratch(Chip& chip, ME& m, int ci, uint32_t pc, const Insn& in, uint32_t addr,
                   uint64_t t, const Out& out) {
  Event ev = completion(m, ci, in);
  uint32_t nbytes = 4;
  bool write = true;
  auto ring = [&]() -> Ring& {
    if (addr >= chip.rings().size() || !chip.rings()[addr].configured)
      fault("bad_command", "scratch ring " + std::to_string(addr) + " is not configured");
    return chip.rings_mut()[addr];
  };
  switch (in.sub) {
    case scratch_cmds::READ:
      for (int k = 0; k < in.count; ++k) ev.words[k] = chip.scratch_word(addr + 4 * k);
      ev.nwords = in.count;
      nbytes = 4u * in.count;
      write = false;
      break;
    case scratch_cmds::WRITE:
      for (int k = 0; k < in.count; ++k) chip.scratch_word(addr + 4 * k) = out(k);
      nbytes = 4u * in.count;
      break;
    case scratch_cmds::PUT: {
      Ring& r = ring();
      if (r.size - r.count < in.count)
        fault("ring_overflow", "put of " + std::to_string(in.count) + " words to scratch ring " +
              std::to_string(addr) + " holding " + std::to_string(r.count) + " of " + std::to_string(r.size));
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->ring_put(m.index, ci, addr, r.tail, r.size, in.count, out(0), t);
      for (int k = 0; k < in.count; ++k) {
        chip.scratch_word(4 * (r.base + r.tail)) = out(k);
        r.tail = (r.tail + 1) % r.size;
      }
      r.count += in.count;
      r.high_water = std::max(r.high_water, r.count);
      r.puts++;
      nbytes = 4u * in.count;
      break;
    }
    case scratch_cmds::GET: {
      Ring& r = ring();
      ev.nwords = in.count;  // zeros when the ring holds fewer than count words
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->ring_get(m.index, ci, addr, r.head, r.size, r.count >= in.count ? in.count : 0,
                      r.count >= in.count ? chip.scratch_word(4 * (r.base + r.head)) : 0, t);
      if (r.count >= in.count) {
        for (int k = 0; k < in.count; ++k) {
          ev.words[k] = chip.scratch_word(4 * (r.base + r.head));
          r.head = (r.head + 1) % r.size;
        }
        r.count -= in.count;
      } else {
        std::fill(ev.words.begin(), ev.words.begin() + in.count, 0u);
      }
      r.gets++;
      nbytes = 4u * in.count;
      write = false;
      break;
    }
    default: {
      uint32_t operand = in.xfer == 0xFF ? 0 : out(0);
      uint32_t old = atomic<ScratchCmds>(chip.scratch_word(addr), in.sub, operand);
      if (returns_old(in.sub, scratch_cmds::TEST_AND_SET, scratch_cmds::SWAP)) {
        ev.words[0] = old;
        ev.nwords = 1;
      }
      break;
    }
  }
  uint64_t done = chip.scratch_u().schedule(t, nbytes, write);
  if (FrameLog* log = chip.frame_log()) [[unlikely]]
    log_command(chip, *log, m, ci, pc, in, kUnitScratch, chip.scratch_u(), addr,
                ev.nwords ? ev.words[0] : (in.xfer == 0xFF ? 0 : out(0)), t, done);
  post_done(chip, ev, done);
}

// DRAM: bytes map to transfer words big-endian (byte 0 = bits 31..24 of the first word).
template <class Out>
void apply_dram(Chip& chip, ME& m, int ci, uint32_t pc, const Insn& in, uint32_t a, uint32_t b,
                uint64_t t, const Out& out) {
  uint32_t nbytes = 8u * in.count;
  Event ev = completion(m, ci, in);
  ev.file = 1;
  uint64_t addr = a;
  bool write = true;
  switch (in.sub) {
    case dram_cmds::READ: {
      addr = static_cast<uint64_t>(a) + b;
      chip.check_dram(addr, nbytes);
      const uint8_t* p = chip.dram_bytes() + addr;
      for (int k = 0; k < 2 * in.count; ++k, p += 4)
        ev.words[k] = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      ev.nwords = static_cast<uint8_t>(2 * in.count);
      write = false;
      break;
    }
    case dram_cmds::WRITE: {
      addr = static_cast<uint64_t>(a) + b;
      chip.check_dram(addr, nbytes);
      uint8_t* p = chip.dram_bytes() + addr;
      for (int k = 0; k < 2 * in.count; ++k, p += 4) {
        uint32_t w = out(k);
        p[0] = static_cast<uint8_t>(w >> 24); p[1] = static_cast<uint8_t>(w >> 16);
        p[2] = static_cast<uint8_t>(w >> 8); p[3] = static_cast<uint8_t>(w);
      }
      break;
    }
    case dram_cmds::RBUF_RD:  // RBUF byte address b -> DRAM a
      chip.check_dram(addr, nbytes);
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->rbuf_read(m.index, ci, rbuf_element(chip, MSF_RBUF_BASE + b));
      chip.media_ref().rbuf_copy_out(b, chip.dram_bytes() + addr, nbytes);
      break;
    default:  // TBUF_WR: DRAM a -> TBUF byte address b
      chip.check_dram(addr, nbytes);
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->tbuf_write(m.index, ci, tbuf_element(chip, MSF_TBUF_BASE + b), t);
      chip.media_ref().tbuf_copy_in(b, chip.dram_bytes() + addr, nbytes);
      write = false;
      break;
  }
  Unit& unit = chip.dram_unit(addr);
  uint64_t done = unit.schedule(t, nbytes, write);
  if (FrameLog* log = chip.frame_log()) [[unlikely]]
    log_command(chip, *log, m, ci, pc, in, log->dram_unit(static_cast<int>(&unit - chip.dram_units().data())),
                unit, static_cast<uint32_t>(addr), b, t, done);
  post_done(chip, ev, done);
}

// MSF: forwarded to the media model at issue; the round trip takes msf csr_latency.
template <class Out>
void apply_msf(Chip& chip, ME& m, int ci, uint32_t pc, const Insn& in, uint32_t a, uint32_t b,
               uint64_t t, const Out& out) {
  Event ev = completion(m, ci, in);
  Media& media = chip.media_ref();
  uint32_t nbytes = 4u * in.count;
  switch (in.sub) {
    case msf_cmds::READ:
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->rbuf_read(m.index, ci, rbuf_element(chip, a + b));
      media.read(a + b, ev.words.data(), in.count, t);
      ev.nwords = in.count;
      break;
    case msf_cmds::WRITE: {
      uint32_t words[16];
      for (int k = 0; k < in.count; ++k) words[k] = out(k);
      if (FrameLog* log = chip.frame_log()) [[unlikely]]
        log->tbuf_write(m.index, ci, tbuf_element(chip, a + b), t);
      media.write(a + b, words, in.count, t);
      break;
    }
    default:  // FAST_WR: a = CSR, b = value
      if (a >= MSF_RX_THREAD_FREELIST_BASE && a < MSF_RBUF_ELEMENT_DONE) {
        // the two status words land in $xfer, $xfer+1 of this context's file
        if ((b & 0xFF) + 2 > static_cast<uint32_t>(m.per_ctx))
          fault("bad_command", "receive status registers $" + std::to_string(b & 0xFF) + ", $" +
                std::to_string((b & 0xFF) + 1) + " are beyond the " + std::to_string(m.per_ctx) +
                " each context owns");
        media.fast_wr(m.index, ci, a, b, t);
        chip.note_media_registration(m.index, ci, b);
      } else {
        media.fast_wr(m.index, ci, a, b, t);
      }
      nbytes = 4;
      break;
  }
  // the media model may now have an earlier event (e.g. a frame became valid): end the burst
  chip.shorten_burst(t + 1);
  uint64_t done = chip.msf_u().schedule_cycles(t, 0, nbytes);
  if (FrameLog* log = chip.frame_log()) [[unlikely]]
    log_command(chip, *log, m, ci, pc, in, kUnitMsf, chip.msf_u(), a + b,
                in.sub == msf_cmds::READ ? ev.words[0] : (in.sub == msf_cmds::WRITE ? out(0) : b),
                t, done);
  post_done(chip, ev, done);
}

// hash_48/64/128[$x, n]: n keys from $x (out) hashed into $x (in).
template <class Out>
void apply_hash(Chip& chip, ME& m, int ci, uint32_t pc, const Insn& in, uint64_t t, const Out& out) {
  Event ev = completion(m, ci, in);
  int per_key = in.aux / in.count;
  for (int k = 0; k < in.aux; ++k) ev.words[k] = out(k);
  for (int key = 0; key < in.count; ++key) hash_key(chip.config().hash, in.sub, ev.words.data() + key * per_key);
  ev.nwords = in.aux;
  uint64_t done = chip.hash_u().schedule_cycles(t, chip.config().hash.occupancy * in.count, 4u * in.aux);
  if (FrameLog* log = chip.frame_log()) [[unlikely]]
    log_command(chip, *log, m, ci, pc, in, kUnitHash, chip.hash_u(), 0, ev.words[0], t, done);
  post_done(chip, ev, done);
}

}  // namespace

// ------------------------------------------------------------------ the handlers (issue)
Outcome exec_sram(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (fifo_full(chip, m)) return Outcome::Stall;
  uint32_t addr = chip.read(m, c, ci, in.a) + chip.read(m, c, ci, in.b);
  if (chip.deferring()) [[unlikely]]
    defer(chip, m, ci, in, OP_SRAM, addr, 0, m.sram_out(), in.count);
  else
    apply_sram(chip, m, ci, c.pc - 1, in, addr, m.time, LiveOut{m.sram_out(), m, ci, in.xfer});
  return issued(m, c, in);
}

Outcome exec_scratch(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (fifo_full(chip, m)) return Outcome::Stall;
  uint32_t addr = chip.read(m, c, ci, in.a) + chip.read(m, c, ci, in.b);
  if (chip.deferring()) [[unlikely]] {
    defer(chip, m, ci, in, OP_SCRATCH, addr, 0, m.sram_out(), in.count);
    if (in.sub == scratch_cmds::PUT || in.sub == scratch_cmds::GET)
      chip.note_ring_command(addr, in.sub == scratch_cmds::PUT, in.count);
  } else
    apply_scratch(chip, m, ci, c.pc - 1, in, addr, m.time, LiveOut{m.sram_out(), m, ci, in.xfer});
  return issued(m, c, in);
}

Outcome exec_dram(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (fifo_full(chip, m)) return Outcome::Stall;
  uint32_t a = chip.read(m, c, ci, in.a), b = chip.read(m, c, ci, in.b);
  if (chip.deferring()) [[unlikely]]
    defer(chip, m, ci, in, OP_DRAM, a, b, m.dram_out(), 2 * in.count);
  else
    apply_dram(chip, m, ci, c.pc - 1, in, a, b, m.time, LiveOut{m.dram_out(), m, ci, in.xfer});
  return issued(m, c, in);
}

Outcome exec_msf(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (fifo_full(chip, m)) return Outcome::Stall;
  uint32_t a = chip.read(m, c, ci, in.a), b = chip.read(m, c, ci, in.b);
  if (chip.deferring()) [[unlikely]]
    defer(chip, m, ci, in, OP_MSF, a, b, m.sram_out(), in.count);
  else
    apply_msf(chip, m, ci, c.pc - 1, in, a, b, m.time, LiveOut{m.sram_out(), m, ci, in.xfer});
  return issued(m, c, in);
}

Outcome exec_hash(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  if (fifo_full(chip, m)) return Outcome::Stall;
  if (chip.deferring()) [[unlikely]]
    defer(chip, m, ci, in, OP_HASH, 0, 0, m.sram_out(), in.aux);
  else
    apply_hash(chip, m, ci, c.pc - 1, in, m.time, LiveOut{m.sram_out(), m, ci, in.xfer});
  return issued(m, c, in);
}

// The effect of a command the quantum schedule recorded at issue, in the units' order.
void apply_command(Chip& chip, const PendingCmd& cmd) {
  ME& m = chip.me_at(cmd.me);
  const SavedOut out{cmd.words.data()};
  switch (cmd.kind) {
    case OP_SRAM: apply_sram(chip, m, cmd.ci, cmd.pc, cmd.in, cmd.a, cmd.t, out); break;
    case OP_SCRATCH: apply_scratch(chip, m, cmd.ci, cmd.pc, cmd.in, cmd.a, cmd.t, out); break;
    case OP_DRAM: apply_dram(chip, m, cmd.ci, cmd.pc, cmd.in, cmd.a, cmd.b, cmd.t, out); break;
    case OP_MSF: apply_msf(chip, m, cmd.ci, cmd.pc, cmd.in, cmd.a, cmd.b, cmd.t, out); break;
    default: apply_hash(chip, m, cmd.ci, cmd.pc, cmd.in, cmd.t, out); break;
  }
}

}  // namespace npkit
