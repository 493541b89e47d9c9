// The analyzer's bookkeeping (analysis.hpp); every rule is bench/tester/analyzer.py's.
#include "analysis.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include "analyzer.hpp"
#include "buffers.hpp"
#include "pyint.hpp"

namespace py = pybind11;

namespace tester {

namespace {
constexpr uint8_t PRESENT = 1, ARRIVED = 2, CHECK_LINK = 4, CHECK_IP = 8;

int bitlen(u128 v) {  // as Python's int.bit_length
  uint64_t high = uint64_t(v >> 64), low = uint64_t(v);
  if (high) return 128 - __builtin_clzll(high);
  return low ? 64 - __builtin_clzll(low) : 0;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// the bytes a frame is compared on: the link header (with its length) and the IP packet
uint64_t compared_hash(uint8_t flags, const uint8_t* link, size_t link_len, const uint8_t* ip,
                       size_t ip_len) {
  uint64_t h = flags;
  if (flags & CHECK_LINK) h = hash_bytes(link, link_len, h ^ (link_len << 8));
  if (flags & CHECK_IP) h = hash_bytes(ip, ip_len, h ^ 0x1f);
  return h;
}
}  // namespace

uint64_t hash_bytes(const uint8_t* p, size_t n, uint64_t seed) {
  // 8 bytes a step, multiply and fold (a 64-bit mix; what it guards is a comparison of
  // bytes, so a collision would need a damaged frame to hit 1 of 2**64 values)
  uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ULL);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  for (size_t k = 0; i < n; i++, k++) w |= uint64_t(p[i]) << (8 * k);
  h = (h ^ w ^ 0xff) * 0x94d049bb133111ebULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

double rational_to_double(bool negative, u128 num, u128 den) {
  // num / den correctly rounded (half to even), as Python's int / int and float(Fraction)
  if (num == 0) return 0.0;
  int shift = 55 - (bitlen(num) - bitlen(den));  // quotient of 55..56 bits
  u128 q, r;
  if (shift >= 0) {
    if (bitlen(num) + shift > 127) throw std::overflow_error("latency: 128 bits exceeded");
    u128 n = num << shift;
    q = n / den;
    r = n % den;
  } else {
    if (bitlen(den) - shift > 127) throw std::overflow_error("latency: 128 bits exceeded");
    u128 d = den << (-shift);
    q = num / d;
    r = num % d;
  }
  int extra = bitlen(q) - 53;
  u128 low = q & ((u128(1) << extra) - 1);
  u128 half = u128(1) << (extra - 1);
  q >>= extra;
  if (low > half || (low == half && (r != 0 || (q & 1)))) q += 1;
  double v = std::ldexp(static_cast<double>(static_cast<uint64_t>(q)), extra - shift);
  return negative ? -v : v;
}

Analysis::Analysis(std::vector<int> framing_pos, std::vector<u128> per_byte,
                   std::vector<u128> fixed, u128 denominator, int64_t bin_ps,
                   std::shared_ptr<const Reference> reference)
    : pos_(std::move(framing_pos)), per_byte_(std::move(per_byte)), fixed_(std::move(fixed)),
      denominator_(denominator), bin_ps_(bin_ps), ref_(std::move(reference)) {}

int Analysis::lookup(int f, u128 dst, int bits) const {
  if (f == 0 && !ref_->dir24.empty()) {
    int32_t entry = ref_->dir24[size_t(dst >> 8)];
    if (!(entry & Reference::LONGER24)) return entry - 1;
  }
  unsigned top = unsigned(dst >> (bits - 16));
  for (size_t k = 0; k < ref_->lengths[f].size(); k++) {
    int length = ref_->lengths[f][k];
    const auto& seen = ref_->first16[f][k];
    if (!seen.empty() && !((seen[top >> 6] >> (top & 63)) & 1)) continue;
    u128 network = length ? (dst >> (bits - length)) << (bits - length) : 0;
    auto found = ref_->tables[f][k].find(network);
    if (found != ref_->tables[f][k].end()) return found->second;
  }
  return -1;
}

bool Analysis::expect(int port, int family, const uint8_t* link, size_t link_len,
                      const uint8_t* ip, size_t ip_len, SentEntry& e) const {
  if (ref_->pass_through) {
    e.expected_port = static_cast<int16_t>(
        port < static_cast<int>(ref_->port_map.size()) ? ref_->port_map[port] : -1);
    e.flags |= CHECK_LINK | CHECK_IP;
    e.expected_hash = compared_hash(e.flags & (CHECK_LINK | CHECK_IP), link, link_len, ip,
                                    ip_len);
    return true;
  }
  int f = family == 6;
  int bits = family == 4 ? 32 : 128;
  u128 dst = 0;
  const uint8_t* a = ip + (family == 4 ? 16 : 24);
  for (int i = 0; i < bits / 8; i++) dst = (dst << 8) | a[i];
  int hop = lookup(f, dst, bits);
  bool v4 = ip[0] >> 4 == 4;
  int ttl = v4 ? ip[8] : ip[7];
  e.expected_port = -1;
  if (hop < 0 || ttl <= 1) return true;  // Expected(None): nothing compared
  int out = ref_->hop_port[hop];
  e.expected_port = static_cast<int16_t>(out);
  // the forwarded IP packet: TTL / hop limit - 1, the IPv4 header checksum recomputed
  std::vector<uint8_t>& fwd = scratch_;  // reused: no allocation per frame
  fwd.assign(ip, ip + ip_len);
  if (v4) {
    size_t header = size_t(ip[0] & 0xF) * 4;
    fwd[8] = uint8_t(ttl - 1);
    fwd[10] = fwd[11] = 0;
    uint64_t acc = 0;
    for (size_t i = 0; i + 1 < header; i += 2) acc += (uint32_t(fwd[i]) << 8) | fwd[i + 1];
    while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
    uint16_t check = static_cast<uint16_t>(~acc & 0xFFFF);
    fwd[10] = uint8_t(check >> 8);
    fwd[11] = uint8_t(check);
  } else {
    fwd[7] = uint8_t(ttl - 1);
  }
  const uint8_t* want_link = nullptr;
  size_t want_len = 0;
  uint8_t ppp[4] = {0xFF, 0x03, 0x00, uint8_t(family == 4 ? 0x21 : 0x57)};
  if (out >= 0 && out < static_cast<int>(ref_->pos_port.size()) && ref_->pos_port[out]) {
    want_link = ppp;
    want_len = 4;
  } else if (ref_->hop_link_known[f][hop]) {
    want_link = reinterpret_cast<const uint8_t*>(ref_->hop_link[f][hop].data());
    want_len = ref_->hop_link[f][hop].size();
  }
  e.flags |= CHECK_IP | (want_link ? CHECK_LINK : 0);
  e.expected_hash = compared_hash(e.flags & (CHECK_LINK | CHECK_IP), want_link, want_len,
                                  fwd.data(), fwd.size());
  return true;
}

void Analysis::sent(int port, int64_t time_ps, const uint8_t* data, size_t size,
                    int record_stream, int64_t record_seq) {
  if (port < 0 || port >= static_cast<int>(pos_.size()) || pos_[port] < 0)
    throw std::out_of_range("sent frame on port " + std::to_string(port) +
                            ", not one of the analyzer's ports");
  if (size > 0xFFFF) throw std::overflow_error("a sent frame of more than 65,535 bytes");
  Parsed p = parse(pos_[port] == 1, data, size);
  if (p.status != SIGNATURE)
    throw std::invalid_argument("sent frame of stream " + std::to_string(record_stream) +
                                " seq " + std::to_string(record_seq) + " on port " +
                                std::to_string(port) + " carries no signature");
  auto [it, fresh] = streams_.try_emplace(record_stream);
  StreamState& s = it->second;
  if (fresh) {
    s.id = record_stream;
    order_.push_back(record_stream);
  }
  if (record_seq < 0) throw std::invalid_argument("negative sequence number");
  size_t seq = static_cast<size_t>(record_seq);
  SentEntry& e = s.sent.at(seq);
  if (e.flags & PRESENT)
    throw std::invalid_argument("stream " + std::to_string(record_stream) + " seq " +
                                std::to_string(record_seq) + " was sent twice");
  e.flags = PRESENT;
  e.time_ps = time_ps;
  e.port = static_cast<int16_t>(port);
  e.length = static_cast<uint16_t>(size);
  expect(port, p.family, data, size_t(p.link), data + p.link, size_t(p.ip_len), e);
  s.n_sent++;
}

void Analysis::received(int port, int64_t time_ps, const uint8_t* data, size_t size) {
  if (port < 0 || port >= static_cast<int>(pos_.size()) || pos_[port] < 0) {
    foreign++;
    return;
  }
  Parsed p = parse(pos_[port] == 1, data, size);
  if (p.status != SIGNATURE) {
    foreign++;
    return;
  }
  auto it = streams_.find(p.stream);
  SentEntry* e = nullptr;
  if (it != streams_.end()) {
    e = it->second.sent.find(size_t(p.seq));
    if (e != nullptr && !(e->flags & PRESENT)) e = nullptr;
  }
  if (e == nullptr) {
    (p.crc_ok ? unknown : corrupted_unattributed)++;
    return;
  }
  StreamState& s = it->second;
  if (e->flags & ARRIVED) {
    s.duplicates++;
    return;
  }
  e->flags |= ARRIVED;
  s.received++;
  if (p.seq < s.next_expected)
    s.reordered++;
  else
    s.next_expected = p.seq + 1;
  bool misrouted = port != e->expected_port;
  bool corrupted = !p.crc_ok;
  uint8_t checks = e->flags & (CHECK_LINK | CHECK_IP);
  if (!corrupted && checks)
    corrupted = compared_hash(checks, data, size_t(p.link), data + p.link, size_t(p.ip_len)) !=
                e->expected_hash;
  s.misrouted += misrouted;
  s.corrupted += corrupted;
  if (misrouted || corrupted) return;
  int64_t filo = time_ps - e->time_ps;
  u128 wires = wire(e->port, e->length) + wire(port, size);
  u128 span = static_cast<u128>(filo < 0 ? -filo : filo) * denominator_;
  bool negative;
  u128 magnitude;
  if (filo >= 0 && span >= wires) {
    negative = false;
    magnitude = span - wires;
  } else {
    negative = true;
    magnitude = filo >= 0 ? wires - span : span + wires;
  }
  double lifo = rational_to_double(negative, magnitude, denominator_);
  Latency& l = s.latency;
  l.count++;
  l.total += filo;
  if (!l.any) {
    l.any = true;
    l.min = l.max = filo;
    l.lifo_min = l.lifo_max = lifo;
  } else {
    if (filo < l.min) l.min = filo;
    if (filo > l.max) l.max = filo;
    if (lifo < l.lifo_min) l.lifo_min = lifo;
    if (lifo > l.lifo_max) l.lifo_max = lifo;
  }
  l.lifo_total += lifo;
  l.histogram[floor_div(filo, bin_ps_)]++;
}

// ------------------------------------------------------------------------ Python
namespace {

u128 big(py::handle value) { return to_u128(value); }

// Reference::dir24 for an IPv4 table of DIR24_MIN_ROUTES routes or more (64 MiB, built in
// tens of ms once per reference; a small table's probes stay in the cache anyway).
constexpr size_t DIR24_MIN_ROUTES = size_t(1) << 16;

void build_dir24(Reference& r) {
  size_t routes = 0;
  for (const auto& table : r.tables[0]) routes += table.size();
  if (routes < DIR24_MIN_ROUTES) return;
  r.dir24.assign(size_t(1) << 24, 0);  // an entry is the next hop + 1 (0: none) | LONGER24
  // shortest first, so a longer prefix overwrites the blocks of a shorter one holding it;
  // the flags of lengths over 24 come last
  std::vector<size_t> order(r.lengths[0].size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.lengths[0][a] < r.lengths[0][b]; });
  for (size_t k : order) {
    int length = r.lengths[0][k];
    for (const auto& [network, hop] : r.tables[0][k]) {
      size_t block = size_t(network >> 8);
      if (length > 24) {
        r.dir24[block] |= Reference::LONGER24;
        continue;
      }
      if (hop < 0 || hop + 1 >= Reference::LONGER24)
        throw std::invalid_argument("a next hop out of the reference's range");
      std::fill_n(r.dir24.begin() + std::ptrdiff_t(block), size_t(1) << (24 - length),
                  int32_t(hop + 1));
    }
  }
}

Reference reference_of(const py::dict& spec) {
  Reference r;
  r.pass_through = spec["kind"].cast<std::string>() == "pass";
  if (r.pass_through) {
    r.port_map = spec["port_map"].cast<std::vector<int>>();
    return r;
  }
  auto tables = spec["tables"].cast<py::list>();  // per family: [(length, [(network, hop)])]
  for (size_t f = 0; f < 2; f++) {
    int bits = f ? 128 : 32;
    for (auto item : tables[f]) {
      auto pair = item.cast<py::tuple>();
      int length = pair[0].cast<int>();
      r.lengths[f].push_back(length);
      auto& table = r.tables[f].emplace_back();
      auto& seen = r.first16[f].emplace_back();
      if (length >= 16) seen.assign(65536 / 64, 0);
      for (auto route : pair[1]) {
        auto nh = route.cast<py::tuple>();
        u128 network = big(nh[0]);
        table.emplace(network, nh[1].cast<int>());
        if (length >= 16) {
          unsigned top = unsigned(network >> (bits - 16));
          seen[top >> 6] |= uint64_t(1) << (top & 63);
        }
      }
    }
    auto links = spec["links"].cast<py::list>()[f];  // per hop: bytes or None
    for (auto link : links) {
      bool known = !link.is_none();
      r.hop_link_known[f].push_back(known);
      r.hop_link[f].push_back(known ? link.cast<std::string>() : std::string());
    }
  }
  r.hop_port = spec["hop_port"].cast<std::vector<int>>();
  for (int pos : spec["pos_port"].cast<std::vector<int>>()) r.pos_port.push_back(pos != 0);
  build_dir24(r);
  return r;
}

// An expectation as tables, built once and shared by every analysis that uses it.
struct PyReference {
  explicit PyReference(const py::dict& spec)
      : reference(std::make_shared<const Reference>(reference_of(spec))) {}
  std::shared_ptr<const Reference> reference;
};

class PyAnalysis {
 public:
  using Int64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  using Int32s = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

  PyAnalysis(std::vector<int> pos, const py::list& per_byte, const py::list& fixed,
             const py::int_& denominator, int64_t bin_ps, const PyReference& reference) {
    std::vector<u128> pb, fx;
    for (auto v : per_byte) pb.push_back(big(v));
    for (auto v : fixed) fx.push_back(big(v));
    analysis_ = std::make_unique<Analysis>(std::move(pos), std::move(pb), std::move(fx),
                                           big(denominator), bin_ps, reference.reference);
  }

  void add_sent(const std::vector<int>& ports, const std::vector<int64_t>& times,
                const py::object& datas, const std::vector<int>& streams,
                const std::vector<int64_t>& seqs) {
    auto frames = frame_buffers(datas, ports.size());
    py::gil_scoped_release released;  // the frames' bytes are the caller's, kept alive
    std::lock_guard<std::mutex> hold(busy_);  // sent and received may come from two threads
    for (size_t i = 0; i < ports.size(); i++)
      analysis_->sent(ports[i], times[i], frames[i].first, frames[i].second, streams[i],
                      seqs[i]);
  }

  // add_sent for one port's batch as the generator gives it (numpy columns: times int64,
  // streams int32, seqs int64): the same calls in the same order, without a Python list
  // per column and its conversion element by element
  void add_sent_batch(int port, const Int64s& times, const py::object& datas,
                      const Int32s& streams, const Int64s& seqs) {
    size_t n = static_cast<size_t>(py::len(datas));
    if (static_cast<size_t>(times.size()) != n || static_cast<size_t>(streams.size()) != n ||
        static_cast<size_t>(seqs.size()) != n)
      throw std::invalid_argument("add_sent_batch: as many times, streams and seqs as frames");
    auto frames = frame_buffers(datas, n);
    const int64_t* t = times.data();
    const int32_t* st = streams.data();
    const int64_t* sq = seqs.data();
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> hold(busy_);
    for (size_t i = 0; i < n; i++)
      analysis_->sent(port, t[i], frames[i].first, frames[i].second, st[i], sq[i]);
  }

  // received frames, analysed in order of (time, port, position in the batch)
  void add_received(const std::vector<int>& ports, const std::vector<int64_t>& times,
                    const py::object& datas) {
    received_in_order(ports.data(), times.data(), ports.size(), datas);
  }

  // add_received with numpy columns (ports int32, times int64)
  void add_received_arrays(const Int32s& ports, const Int64s& times, const py::object& datas) {
    if (times.size() != ports.size())
      throw std::invalid_argument("add_received_arrays: as many times as ports");
    received_in_order(ports.data(), times.data(), static_cast<size_t>(ports.size()), datas);
  }

 private:
  void received_in_order(const int* ports, const int64_t* times, size_t n,
                         const py::object& datas) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return times[a] != times[b] ? times[a] < times[b] : ports[a] < ports[b];
    });
    auto frames = frame_buffers(datas, n);
    py::gil_scoped_release released;  // another thread's Python runs meanwhile
    std::lock_guard<std::mutex> hold(busy_);
    for (size_t i : order)
      analysis_->received(ports[i], times[i], frames[i].first, frames[i].second);
  }

 public:
  py::dict summary() const {
    std::lock_guard<std::mutex> hold(busy_);
    py::list streams;
    for (int id : analysis_->order()) {
      const StreamState& s = analysis_->stream(id);
      int64_t lost = 0, filtered = 0;
      s.sent.each([&](const SentEntry& e) {
        if ((e.flags & PRESENT) && !(e.flags & ARRIVED)) (e.expected_port < 0 ? filtered : lost)++;
      });
      const Latency& l = s.latency;
      py::dict d;
      d["stream"] = id;
      d["sent"] = s.n_sent;
      d["received"] = s.received;
      d["lost"] = lost;
      d["filtered"] = filtered;
      d["duplicates"] = s.duplicates;
      d["reordered"] = s.reordered;
      d["misrouted"] = s.misrouted;
      d["corrupted"] = s.corrupted;
      d["next_expected"] = s.next_expected;
      d["count"] = l.count;
      d["total_ps"] = l.total;
      d["min_ps"] = l.any ? py::object(py::int_(l.min)) : py::object(py::none());
      d["max_ps"] = l.any ? py::object(py::int_(l.max)) : py::object(py::none());
      d["lifo_min_ps"] = l.any ? py::object(py::float_(l.lifo_min)) : py::object(py::none());
      d["lifo_max_ps"] = l.any ? py::object(py::float_(l.lifo_max)) : py::object(py::none());
      d["lifo_total_ps"] = l.lifo_total;
      d["histogram"] = l.histogram;
      streams.append(d);
    }
    py::dict out;
    out["streams"] = streams;
    out["foreign"] = analysis_->foreign;
    out["unknown"] = analysis_->unknown;
    out["corrupted_unattributed"] = analysis_->corrupted_unattributed;
    return out;
  }

 private:
  std::unique_ptr<Analysis> analysis_;
  mutable std::mutex busy_;  // taken without the GIL held: never waits for it
};

}  // namespace

void bind_analysis(py::module_& m) {
  py::class_<PyReference>(m, "Reference").def(py::init<const py::dict&>());
  py::class_<PyAnalysis>(m, "Analysis")
      .def(py::init<std::vector<int>, const py::list&, const py::list&, const py::int_&,
                    int64_t, const PyReference&>())
      .def("add_sent", &PyAnalysis::add_sent)
      .def("add_received", &PyAnalysis::add_received)
      .def("add_sent_batch", &PyAnalysis::add_sent_batch)
      .def("add_received_arrays", &PyAnalysis::add_received_arrays)
      .def("summary", &PyAnalysis::summary);
  m.def("rational_to_double", [](const py::int_& num, const py::int_& den) {
    bool negative = py::int_(num).cast<py::object>() < py::int_(0);
    py::object magnitude = negative ? py::object(-py::reinterpret_borrow<py::object>(num))
                                    : py::object(num);
    return rational_to_double(negative, big(magnitude), big(den));
  }, "num / den as the nearest double (tests compare it with Python's division)");
}

}  // namespace tester
