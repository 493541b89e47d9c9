// Chip configuration from the dict that tomllib gives for sim/chips/*.toml (plus "ports"):
// every key checked, a ValueError naming the bad key otherwise.
#include "config_py.hpp"

#include <cmath>

namespace npkit {
namespace py = pybind11;
namespace {

struct Reader {
  const py::dict& root;

  py::dict section(const char* name) const {
    if (!root.contains(name)) throw py::value_error(std::string("chip config: missing table [") + name + "]");
    py::object s = root[name];
    if (!py::isinstance<py::dict>(s)) throw py::value_error(std::string("chip config: [") + name + "] must be a table");
    return s.cast<py::dict>();
  }

  static std::string key_name(const char* sec, const char* key) { return std::string(sec) + "." + key; }

  static py::object get(const py::dict& s, const char* sec, const char* key) {
    if (!s.contains(key)) throw py::value_error("chip config: missing key " + key_name(sec, key));
    return s[key];
  }

  static double number(const py::dict& s, const char* sec, const char* key, double lo, double hi) {
    py::object v = get(s, sec, key);
    if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)))
      throw py::value_error("chip config: " + key_name(sec, key) + " must be a number");
    double d = v.cast<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
      throw py::value_error("chip config: " + key_name(sec, key) + " = " + std::to_string(d) + " is out of range [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return d;
  }

  static uint64_t integer(const py::dict& s, const char* sec, const char* key, uint64_t lo, uint64_t hi) {
    py::object v = get(s, sec, key);
    if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
      throw py::value_error("chip config: " + key_name(sec, key) + " must be an integer");
    py::int_ iv = v.cast<py::int_>();
    if (iv < py::int_(lo) || iv > py::int_(hi))
      throw py::value_error("chip config: " + key_name(sec, key) + " = " + py::str(v).cast<std::string>() +
                            " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return iv.cast<uint64_t>();
  }

  static uint64_t integer_or(const py::dict& s, const char* sec, const char* key, uint64_t lo, uint64_t hi,
                             uint64_t dflt) {
    return s.contains(key) ? integer(s, sec, key, lo, hi) : dflt;
  }

  // A 128-bit unsigned value (hash polynomials), stored low/high.
  static void wide(const py::dict& s, const char* sec, const char* key, int bits, uint64_t out[2]) {
    if (!s.contains(key)) return;
    py::object v = s[key];
    if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
      throw py::value_error("chip config: " + key_name(sec, key) + " must be an integer");
    py::int_ iv = v.cast<py::int_>();
    py::int_ limit = py::reinterpret_steal<py::int_>(
        PyNumber_Lshift(py::int_(1).ptr(), py::int_(bits).ptr()));
    if (iv < py::int_(0) || !(iv < limit))
      throw py::value_error("chip config: " + key_name(sec, key) + " must fit in " + std::to_string(bits) + " bits");
    py::int_ mask64 = py::int_(UINT64_MAX);
    out[0] = py::int_(iv & mask64).cast<uint64_t>();
    out[1] = py::int_(py::reinterpret_steal<py::object>(PyNumber_Rshift(iv.ptr(), py::int_(64).ptr()))).cast<uint64_t>();
  }
};

ChannelConfig channel(const py::dict& s, const char* sec, bool split_rw) {
  ChannelConfig c;
  c.latency = Reader::integer(s, sec, "latency", 1, 1u << 30);
  if (split_rw) {
    c.read_bytes_per_cycle = Reader::number(s, sec, "read_bytes_per_cycle", 1e-6, 1e6);
    c.write_bytes_per_cycle = Reader::number(s, sec, "write_bytes_per_cycle", 1e-6, 1e6);
  } else {
    c.read_bytes_per_cycle = c.write_bytes_per_cycle = Reader::number(s, sec, "bytes_per_cycle", 1e-6, 1e6);
  }
  c.min_access_bytes = static_cast<uint32_t>(Reader::integer_or(s, sec, "min_access_bytes", 1, 4096, 4));
  return c;
}

void hash_defaults(HashConfig& h) {
  // see docs/sim-core.md "Hash unit"
  h.polynomial[0][0] = 0x291;                      // x^48 + x^9 + x^7 + x^4 + 1
  h.polynomial[1][0] = 0x42F0E1EBA9EA3693ULL;      // x^64 + ECMA-182
  h.polynomial[2][0] = 0x87;                       // x^128 + x^7 + x^2 + x + 1
  h.multiplier[0][0] = 0x9E3779B97F4AULL;
  h.multiplier[1][0] = 0x9E3779B97F4A7C15ULL;
  h.multiplier[2][0] = 0xF39CC0605CEDC835ULL;
  h.multiplier[2][1] = 0x9E3779B97F4A7C15ULL;
}

std::vector<PortConfig> ports(const py::dict& root) {
  std::vector<PortConfig> out;
  if (!root.contains("ports")) return out;
  py::object list = root["ports"];
  if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list))
    throw py::value_error("chip config: ports must be a list of tables");
  int i = 0;
  for (py::handle item : list) {
    std::string name = "ports[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) throw py::value_error("chip config: " + name + " must be a table");
    py::dict p = py::reinterpret_borrow<py::dict>(item);
    PortConfig pc;
    pc.rate_bps = Reader::number(p, name.c_str(), "rate_bps", 1.0, 1e13);
    pc.overhead_bytes = static_cast<int>(Reader::integer(p, name.c_str(), "overhead_bytes", 0, 1 << 16));
    pc.rx_freelist = static_cast<int>(Reader::integer(p, name.c_str(), "rx_freelist", 0, 15));
    out.push_back(pc);
  }
  return out;
}

}  // namespace

ChipConfig parse_config(const py::dict& root) {
  Reader r{root};
  ChipConfig c;
  if (root.contains("name")) c.name = py::str(root["name"]).cast<std::string>();

  py::dict me = r.section("me");
  py::object numbers = Reader::get(me, "me", "numbers");
  if (!py::isinstance<py::list>(numbers) && !py::isinstance<py::tuple>(numbers))
    throw py::value_error("chip config: me.numbers must be a list of ME numbers");
  for (py::handle n : numbers) {
    if (!py::isinstance<py::int_>(n) || n.cast<py::int_>() < py::int_(0) || n.cast<py::int_>() > py::int_(31))
      throw py::value_error("chip config: me.numbers entries must be integers 0..31");
    c.me_numbers.push_back(n.cast<int>());
  }
  if (c.me_numbers.empty() || c.me_numbers.size() > 64)
    throw py::value_error("chip config: me.numbers must list 1..64 MEs");
  c.clock_hz = Reader::number(me, "me", "clock_hz", 1e3, 1e12);
  c.contexts = static_cast<int>(Reader::integer(me, "me", "contexts", 8, 8));
  c.control_store_words = static_cast<uint32_t>(Reader::integer(me, "me", "control_store_words", 1, 1u << isa::TARGET_BITS));
  c.gprs_per_bank = static_cast<int>(Reader::integer(me, "me", "gprs_per_bank", 32, 256));
  c.xfer_per_kind = static_cast<int>(Reader::integer(me, "me", "xfer_per_kind", 32, 256));
  c.nn_registers = static_cast<int>(Reader::integer(me, "me", "nn_registers", 32, 256));
  for (auto [v, key] : {std::pair{c.gprs_per_bank, "gprs_per_bank"}, std::pair{c.xfer_per_kind, "xfer_per_kind"},
                        std::pair{c.nn_registers, "nn_registers"}})
    if (v % 8) throw py::value_error(std::string("chip config: me.") + key + " must be a multiple of 8");
  c.local_memory_words = static_cast<uint32_t>(Reader::integer(me, "me", "local_memory_words", 1, 1 << 20));
  c.cam_entries = static_cast<int>(Reader::integer(me, "me", "cam_entries", 1, 32));
  c.signals = static_cast<int>(Reader::integer(me, "me", "signals", 15, 15));
  c.branch_taken_penalty = Reader::integer(me, "me", "branch_taken_penalty", 0, 64);
  c.lm_addr_delay = Reader::integer(me, "me", "lm_addr_delay", 0, 64);
  c.command_fifo_depth = static_cast<int>(Reader::integer(me, "me", "command_fifo_depth", 1, 1024));

  py::dict sram = r.section("sram");
  c.sram_channels = static_cast<int>(Reader::integer(sram, "sram", "channels", 1, 4));
  c.sram_channel_bytes = Reader::integer(sram, "sram", "channel_bytes", 64, 1ULL << 26);
  if (c.sram_channel_bytes % 4) throw py::value_error("chip config: sram.channel_bytes must be a multiple of 4");
  c.sram = channel(sram, "sram", true);
  c.queue_descriptors = static_cast<uint32_t>(Reader::integer(sram, "sram", "queue_descriptors", 1, 1024));

  py::dict dram = r.section("dram");
  c.dram_channels = static_cast<int>(Reader::integer(dram, "dram", "channels", 1, 16));
  c.dram_bytes = Reader::integer(dram, "dram", "bytes", 64, 1ULL << 32);
  if (c.dram_bytes % 8) throw py::value_error("chip config: dram.bytes must be a multiple of 8");
  c.dram = channel(dram, "dram", false);
  c.dram_interleave_bytes = Reader::integer(dram, "dram", "interleave_bytes", 8, 1 << 20);

  py::dict scratch = r.section("scratch");
  c.scratch_bytes = Reader::integer(scratch, "scratch", "bytes", 64, 1 << 24);
  if (c.scratch_bytes % 4) throw py::value_error("chip config: scratch.bytes must be a multiple of 4");
  c.scratch = channel(scratch, "scratch", false);
  c.rings = static_cast<int>(Reader::integer(scratch, "scratch", "rings", 16, 16));  // INP_STATES has 16
  c.ring_min_words = static_cast<uint32_t>(Reader::integer(scratch, "scratch", "ring_min_words", 16, 1 << 20));
  c.ring_max_words = static_cast<uint32_t>(Reader::integer(scratch, "scratch", "ring_max_words", c.ring_min_words, 1 << 20));

  py::dict hash = r.section("hash");
  c.hash.latency = Reader::integer(hash, "hash", "latency", 1, 1 << 20);
  c.hash.occupancy = Reader::integer(hash, "hash", "occupancy", 0, 1 << 20);
  hash_defaults(c.hash);
  const char* sizes[3] = {"48", "64", "128"};
  const int widths[3] = {48, 64, 128};
  for (int i = 0; i < 3; ++i) {
    std::string pk = std::string("polynomial_") + sizes[i], mk = std::string("multiplier_") + sizes[i];
    Reader::wide(hash, "hash", pk.c_str(), widths[i], c.hash.polynomial[i]);
    Reader::wide(hash, "hash", mk.c_str(), widths[i], c.hash.multiplier[i]);
  }

  py::dict msf = r.section("msf");
  c.media.rbuf_bytes = static_cast<int>(Reader::integer(msf, "msf", "rbuf_bytes", 64, 1 << 24));
  c.media.tbuf_bytes = static_cast<int>(Reader::integer(msf, "msf", "tbuf_bytes", 64, 1 << 24));
  c.media.element_bytes = static_cast<int>(Reader::integer(msf, "msf", "element_bytes", 64, 256));
  if (c.media.element_bytes != 64 && c.media.element_bytes != 128 && c.media.element_bytes != 256)
    throw py::value_error("chip config: msf.element_bytes must be 64, 128 or 256");
  c.media.autopush_latency = Reader::integer(msf, "msf", "autopush_latency", 0, 1 << 20);
  c.media.rbuf_partitions = static_cast<int>(Reader::integer_or(msf, "msf", "rbuf_partitions", 0, 4, 0));
  c.media.me_clock_hz = c.clock_hz;
  c.msf_csr_latency = Reader::integer(msf, "msf", "csr_latency", 1, 1 << 20);
  c.media.ports = ports(root);

  py::dict run = r.section("run");
  c.deadlock_cycles = Reader::integer(run, "run", "deadlock_cycles", 1, UINT64_MAX / 4);
  c.burst_cycles = Reader::integer(run, "run", "burst_cycles", 1, 1 << 20);
  return c;
}

}  // namespace npkit
