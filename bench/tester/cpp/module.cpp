// npkit.bench.tester._fast: the tester's per-frame work in C++ (bench/tester/fast.py is
// its Python face; the specs it takes are built there).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "analyzer.hpp"
#include "generator.hpp"
#include "pyint.hpp"
#include "tally.hpp"

namespace py = pybind11;
using tester::to_u128;
using tester::u128;

namespace {

std::array<uint8_t, 6> mac(py::handle value) {
  std::string bytes = value.cast<std::string>();
  if (bytes.size() != 6) throw std::invalid_argument("a MAC address has 6 bytes");
  std::array<uint8_t, 6> out{};
  for (size_t i = 0; i < 6; i++) out[i] = static_cast<uint8_t>(bytes[i]);
  return out;
}

tester::Destinations destinations(py::handle spec) {
  tester::Destinations out;
  if (spec.is_none()) return out;
  auto pair = spec.cast<py::tuple>();
  std::string kind = pair[0].cast<std::string>();
  if (kind == "fixed") {
    for (auto a : pair[1]) out.addresses.push_back(to_u128(a));
    return out;
  }
  out.fixed = false;
  out.offsets.push_back(0);
  for (auto prefix : pair[1]) {
    u128 total = 0;
    for (auto range : prefix) {
      auto lohi = range.cast<py::tuple>();
      u128 lo = to_u128(lohi[0]), hi = to_u128(lohi[1]);
      out.los.push_back(lo);
      out.his.push_back(hi);
      total += hi - lo + 1;
    }
    out.totals.push_back(total);
    out.offsets.push_back(out.los.size());
  }
  return out;
}

tester::StreamSpec stream_spec(const py::dict& d) {
  tester::StreamSpec s;
  s.id = d["id"].cast<int>();
  s.mt_state = d["mt_state"].cast<std::vector<uint32_t>>();
  s.mixed = d["mixed"].cast<bool>();
  s.family = d["family"].cast<int>();
  s.v6_share = d["v6_share"].cast<double>();
  s.sizes = d["sizes"].cast<size_t>();
  s.cum_weights = d["cum_weights"].cast<std::vector<double>>();
  auto shapes = d["shapes"].cast<py::list>();
  for (size_t f = 0; f < 2; f++) {
    for (auto item : shapes[f]) {
      auto t = item.cast<py::tuple>();
      s.shapes[f].push_back(tester::Shape{t[0].cast<int>(), to_u128(t[1]), to_u128(t[2]),
                                          t[3].cast<std::string>()});
    }
  }
  auto dests = d["dests"].cast<py::list>();
  s.dests[0] = destinations(dests[0]);
  s.dests[1] = destinations(dests[1]);
  s.start = to_u128(d["start"]);
  if (!d["end"].is_none()) {
    s.has_end = true;
    s.end = to_u128(d["end"]);
  }
  s.count = d["count"].is_none() ? -1 : d["count"].cast<int64_t>();
  s.pos = d["pos"].cast<bool>();
  s.transport = d["transport"].cast<int>();
  s.sport = d["sport"].cast<int>();
  s.dport = d["dport"].cast<int>();
  s.src4 = to_u128(d["src4"]);
  s.src6 = to_u128(d["src6"]);
  s.dst_mac = mac(d["dst_mac"]);
  s.src_mac = mac(d["src_mac"]);
  return s;
}

// A port's generator handed to Python: frames in batches of columns.
class PyPort {
 public:
  PyPort(const py::int_& denominator, const py::list& specs, const py::bytes& filler) {
    auto shared = std::make_shared<const std::string>(filler.cast<std::string>());
    std::vector<tester::StreamGen> streams;
    int order = 0;
    for (auto spec : specs) streams.emplace_back(stream_spec(spec.cast<py::dict>()), order++,
                                                 shared);
    port_ = std::make_unique<tester::PortGen>(to_u128(denominator), std::move(streams));
  }

  // Up to ``limit`` frames, packed in one buffer: (send times ps, frame bytes uint8,
  // offsets int64 (n + 1), stream ids, sequence numbers); built without the GIL (no Python
  // object per frame), so another thread's Python runs meanwhile.
  py::tuple take_packed(size_t limit) {
    std::vector<int64_t> times, seqs, offsets{0};
    std::vector<int32_t> ids;
    std::vector<uint8_t> data;
    {
      py::gil_scoped_release released;
      tester::Frame frame;
      std::vector<uint8_t> buffer(9216 + 64);
      while (times.size() < limit && port_->next(frame)) {
        size_t n = frame.stream->build(frame.planned, frame.time_ps, buffer.data());
        data.insert(data.end(), buffer.data(), buffer.data() + n);
        offsets.push_back(static_cast<int64_t>(data.size()));
        times.push_back(static_cast<int64_t>(frame.time_ps));
        seqs.push_back(frame.planned.seq);
        ids.push_back(static_cast<int32_t>(frame.stream->id()));
      }
    }
    return py::make_tuple(py::array_t<int64_t>(times.size(), times.data()),
                          py::array_t<uint8_t>(data.size(), data.data()),
                          py::array_t<int64_t>(offsets.size(), offsets.data()),
                          py::array_t<int32_t>(ids.size(), ids.data()),
                          py::array_t<int64_t>(seqs.size(), seqs.data()));
  }

 private:
  std::unique_ptr<tester::PortGen> port_;
};

}  // namespace

PYBIND11_MODULE(_fast, m) {
  m.doc() = "The tester's per-frame work (generation, signatures) in C++.";
  py::class_<PyPort>(m, "PortGenerator")
      .def(py::init<const py::int_&, const py::list&, const py::bytes&>())
      .def("take_packed", &PyPort::take_packed, py::arg("limit"));
  tester::bind_analyzer(m);
  tester::bind_analysis(m);
  tester::bind_tally(m);
}
