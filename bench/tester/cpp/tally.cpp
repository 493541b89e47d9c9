// A batch of frames tallied per frame length in one pass (bench/tester/tally.py's
// PortTally.add): IP bytes by the IP header's length field, frames at or before a time,
// and per frame length the count and the earliest and latest time.  The rule is
// tally.ip_lengths'; frames shorter than the link header + 6 bytes are left to Python.
#include "tally.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "buffers.hpp"

namespace py = pybind11;

namespace tester {

namespace {

constexpr size_t POS_HEADER = 4, ETH_HEADER = 14;

int64_t word(const uint8_t* d, size_t k) { return (int64_t(d[k]) << 8) | d[k + 1]; }

// tally.ip_lengths for one frame of at least link + 6 bytes
int64_t ip_length(bool pos, const uint8_t* d) {
  size_t link = pos ? POS_HEADER : ETH_HEADER;
  int64_t kind = pos ? (d[0] == 0xFF && d[1] == 0x03 ? word(d, 2) : -1) : word(d, 12);
  bool v4 = kind == (pos ? 0x0021 : 0x0800), v6 = kind == (pos ? 0x0057 : 0x86DD);
  return v4 ? word(d, link + 2) : v6 ? 40 + word(d, link + 4) : 0;
}

struct Size {
  int64_t count = 0, first = 0, last = 0;
};

py::tuple tally_batch(bool pos, py::array_t<int64_t, py::array::c_style | py::array::forcecast> times,
                      const py::object& datas, py::object until) {
  size_t n = static_cast<size_t>(py::len(datas));
  if (static_cast<size_t>(times.size()) != n)
    throw std::invalid_argument("tally_batch: as many times as frames");
  bool bounded = !until.is_none();
  int64_t until_ps = bounded ? until.cast<int64_t>() : 0;
  auto frames = frame_buffers(datas, n);
  const int64_t* t = times.data();
  int64_t ip_bytes = 0, by_until = 0;
  std::vector<int64_t> short_frames;
  std::map<int64_t, Size> sizes;  // in order of length, as numpy.unique gives them
  {
    py::gil_scoped_release released;  // the frames' bytes are the caller's, kept alive
    size_t whole = (pos ? POS_HEADER : ETH_HEADER) + 6;
    for (size_t i = 0; i < n; i++) {
      auto [d, length] = frames[i];
      if (length >= whole)
        ip_bytes += ip_length(pos, d);
      else
        short_frames.push_back(int64_t(i));
      if (bounded && t[i] <= until_ps) by_until++;
      auto [it, fresh] = sizes.try_emplace(int64_t(length));
      Size& s = it->second;
      if (fresh || t[i] < s.first) s.first = t[i];
      if (fresh || t[i] > s.last) s.last = t[i];
      s.count++;
    }
  }
  py::list rows;
  for (const auto& [length, s] : sizes) rows.append(py::make_tuple(length, s.count, s.first, s.last));
  return py::make_tuple(ip_bytes, by_until, short_frames, rows);
}

}  // namespace

void bind_tally(py::module_& m) {
  m.def("tally_batch", &tally_batch, py::arg("pos"), py::arg("times_ps"), py::arg("datas"),
        py::arg("until_ps"),
        "(IP bytes of the frames of at least link header + 6 bytes, frames with a time at "
        "or before until_ps (None: 0), indices of the shorter frames, [(frame length, "
        "frames, earliest time, latest time)] by length)");
}

}  // namespace tester
