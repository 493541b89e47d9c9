// Batch parsing of the tester's frames (see analyzer.hpp); the rules are packet.py's parse():
// link header (PPP or Ethernet II), an IPv4 / IPv6 header whose length fits the frame, and
// the signature after the UDP header (protocol 17) or the IP header (protocol 253), its
// CRC-32 over the signature's first 16 bytes and every IP payload byte after it.
#include "analyzer.hpp"

#include <pybind11/numpy.h>
#include <zlib.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace py = pybind11;

namespace tester {
namespace {

uint32_t be(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Parsed parse(bool pos, const uint8_t* d, size_t n) {
  Parsed out;
  size_t link;
  int family;
  if (pos) {
    if (n < 4 || d[0] != 0xFF || d[1] != 0x03) return out;
    uint32_t proto = be(d + 2, 2);
    if (proto == 0x0021) family = 4;
    else if (proto == 0x0057) family = 6;
    else return out;
    link = 4;
  } else {
    if (n < 14) return out;
    uint32_t type = be(d + 12, 2);
    if (type == 0x0800) family = 4;
    else if (type == 0x86DD) family = 6;
    else return out;
    link = 14;
  }
  const uint8_t* rest = d + link;
  size_t left = n - link;
  size_t header, ip_len;
  int protocol;
  if (family == 4) {
    if (left < 20 || rest[0] >> 4 != 4) return out;
    header = size_t(rest[0] & 0xF) * 4;
    ip_len = be(rest + 2, 2);
    protocol = rest[9];
  } else {
    if (left < 40 || rest[0] >> 4 != 6) return out;
    header = 40;
    ip_len = 40 + be(rest + 4, 2);
    protocol = rest[6];
  }
  if (!(header <= ip_len && ip_len <= left) || header < 20) return out;
  out.status = NO_SIGNATURE;
  out.family = static_cast<int8_t>(family);
  out.link = static_cast<int16_t>(link);
  out.ip_len = static_cast<int32_t>(ip_len);
  if (protocol != 17 && protocol != 253) return out;
  size_t offset = header + (protocol == 17 ? 8 : 0);
  if (offset > ip_len || ip_len - offset < 20) return out;
  const uint8_t* sig = rest + offset;
  size_t payload = ip_len - offset;
  if (sig[0] != 'N' || sig[1] != 'P' || sig[2] != 'k' || sig[3] != 'T') return out;
  out.status = SIGNATURE;
  out.stream = static_cast<int32_t>(be(sig + 4, 2));
  out.seq = be(sig + 6, 4);
  out.time_ps = static_cast<int64_t>((uint64_t(be(sig + 10, 2)) << 32) | be(sig + 12, 4));
  uLong crc = crc32(crc32(0L, sig, 16), sig + 20, static_cast<uInt>(payload - 20));
  out.crc_ok = static_cast<uint32_t>(crc) == be(sig + 16, 4);
  return out;
}

namespace {

template <typename T>
py::array_t<T> column(const std::vector<Parsed>& rows, T Parsed::*field) {
  py::array_t<T> out(rows.size());
  auto view = out.template mutable_unchecked<1>();
  for (size_t i = 0; i < rows.size(); i++) view(i) = rows[i].*field;
  return out;
}

// (status, family, link bytes, IP bytes, stream, seq, send time ps, crc ok) of every frame
py::dict parse_frames(bool pos, const py::list& frames) {
  std::vector<Parsed> rows;
  rows.reserve(frames.size());
  for (auto item : frames) {
    char* data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(item.ptr(), &data, &size) != 0) throw py::error_already_set();
    rows.push_back(parse(pos, reinterpret_cast<const uint8_t*>(data), size_t(size)));
  }
  py::dict out;
  out["status"] = column(rows, &Parsed::status);
  out["family"] = column(rows, &Parsed::family);
  out["link"] = column(rows, &Parsed::link);
  out["ip_len"] = column(rows, &Parsed::ip_len);
  out["stream"] = column(rows, &Parsed::stream);
  out["seq"] = column(rows, &Parsed::seq);
  out["time_ps"] = column(rows, &Parsed::time_ps);
  out["crc_ok"] = column(rows, &Parsed::crc_ok);
  return out;
}

}  // namespace

void bind_analyzer(py::module_& m) {
  m.def("parse_frames", &parse_frames, py::arg("pos"), py::arg("frames"),
        "Columns of packet.parse() for a list of frames (bytes) of one framing: status "
        "(0 not IP, 1 IP without signature, 2 signature), family, link header bytes, IP "
        "bytes, stream, sequence number, send time (ps), CRC correct.");
}

}  // namespace tester
