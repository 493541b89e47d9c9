// Python binding of the media model on its own: `_core.MediaModel`, a Media driven from
// pytest with a host that records the autopushes instead of a chip, and `_core.MediaFault`.
// The chip module's PYBIND11_MODULE calls bind_media(m).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "media.hpp"

namespace py = pybind11;

namespace npkit {
namespace {

using AutopushRecord = std::tuple<int, int, int, std::vector<uint32_t>, int, uint64_t>;

class RecordingHost final : public MediaHost {
 public:
  void autopush(int me, int ctx, int xfer, const uint32_t* words, int n, int sig,
                uint64_t when) override {
    records_.emplace_back(me, ctx, xfer, std::vector<uint32_t>(words, words + n), sig, when);
  }
  std::vector<AutopushRecord> take() {
    std::vector<AutopushRecord> out;
    out.swap(records_);
    return out;
  }

 private:
  std::vector<AutopushRecord> records_;
};

py::object required(const py::dict& d, const char* key, const std::string& where) {
  if (!d.contains(key)) {
    throw py::value_error(where + ": missing key '" + key + "'");
  }
  return d[key];
}

MediaConfig config_from_dict(const py::dict& d) {
  const std::string where = "MediaModel config";
  MediaConfig cfg{};
  try {
    cfg.rbuf_bytes = required(d, "rbuf_bytes", where).cast<int>();
    cfg.tbuf_bytes = required(d, "tbuf_bytes", where).cast<int>();
    cfg.element_bytes = required(d, "element_bytes", where).cast<int>();
    cfg.autopush_latency = required(d, "autopush_latency", where).cast<uint64_t>();
    cfg.me_clock_hz = required(d, "me_clock_hz", where).cast<double>();
    if (d.contains("rbuf_partitions")) cfg.rbuf_partitions = d["rbuf_partitions"].cast<int>();
    int index = 0;
    for (py::handle item : required(d, "ports", where)) {
      const std::string port_where = where + ", port " + std::to_string(index);
      if (!py::isinstance<py::dict>(item)) throw py::value_error(port_where + ": expected a dict");
      py::dict port = py::reinterpret_borrow<py::dict>(item);
      PortConfig pc{};
      pc.rate_bps = required(port, "rate_bps", port_where).cast<double>();
      pc.overhead_bytes = required(port, "overhead_bytes", port_where).cast<int>();
      pc.rx_freelist = port.contains("rx_freelist") ? port["rx_freelist"].cast<int>() : index;
      cfg.ports.push_back(pc);
      ++index;
    }
  } catch (const py::cast_error& e) {
    throw py::value_error(where + ": a value has the wrong type (" + e.what() + ")");
  }
  return cfg;
}

// A Media with a recording host; the host is declared first so it outlives the Media.
class MediaModel {
 public:
  explicit MediaModel(const py::dict& d) : media_(config_from_dict(d), host_) {}
  MediaModel(const MediaModel&) = delete;
  MediaModel& operator=(const MediaModel&) = delete;

  Media& media() { return media_; }
  std::vector<AutopushRecord> take_autopushes() { return host_.take(); }

 private:
  RecordingHost host_;
  Media media_;
};

py::dict counters_dict(const PortCounters& c) {
  py::dict d;
  d["rx_frames"] = c.rx_frames;
  d["rx_bytes"] = c.rx_bytes;
  d["rx_dropped_rbuf_full"] = c.rx_dropped_rbuf_full;
  d["rx_dropped_too_long"] = c.rx_dropped_too_long;
  d["rx_handed"] = c.rx_handed;
  d["rx_mpackets"] = c.rx_mpackets;
  d["rx_flow_control_stalls"] = c.rx_flow_control_stalls;
  d["rbuf_partition_high_water"] = c.rbuf_partition_high_water;
  d["tx_frames"] = c.tx_frames;
  d["tx_bytes"] = c.tx_bytes;
  d["tx_elements"] = c.tx_elements;
  d["tx_underruns"] = c.tx_underruns;
  d["rbuf_high_water_elements"] = c.rbuf_high_water_elements;
  d["rx_waiting_high_water"] = c.rx_waiting_high_water;
  d["rbuf_elements_in_use"] = c.rbuf_elements_in_use;
  d["tbuf_elements_queued"] = c.tbuf_elements_queued;
  return d;
}

}  // namespace

void bind_media(py::module_& m) {
  py::register_exception<MediaFault>(m, "MediaFault", PyExc_ValueError);

  py::class_<MediaModel>(m, "MediaModel",
                         "The media model (MSF, RBUF, TBUF, ports) alone, with a host that "
                         "records autopushes. See docs/media.md.")
      .def(py::init<const py::dict&>(), py::arg("config"),
           "config: dict(rbuf_bytes, tbuf_bytes, element_bytes, autopush_latency, me_clock_hz, "
           "[rbuf_partitions], "
           "ports=[dict(rate_bps, overhead_bytes, rx_freelist)])")
      .def(
          "add_rx_frame",
          [](MediaModel& s, int port, const py::bytes& data, int64_t not_before) {
            std::string bytes = data;
            s.media().add_rx_frame(port, std::vector<uint8_t>(bytes.begin(), bytes.end()),
                                   not_before);
          },
          py::arg("port"), py::arg("data"), py::arg("not_before") = -1)
      .def(
          "add_rx_frames",
          [](MediaModel& s, int port, const py::bytes& data, int64_t count, int64_t not_before) {
            std::string bytes = data;
            for (int64_t i = 0; i < count; ++i) {
              s.media().add_rx_frame(port, std::vector<uint8_t>(bytes.begin(), bytes.end()),
                                     not_before);
            }
          },
          py::arg("port"), py::arg("data"), py::arg("count"), py::arg("not_before") = -1,
          "add `count` copies of one frame (a line-rate burst when not_before is -1)")
      .def("take_tx",
           [](MediaModel& s) {
             py::list out;
             for (TxFrame& f : s.media().take_tx()) {
               out.append(py::make_tuple(
                   f.port, f.first_bit_cycle, f.last_bit_cycle,
                   py::bytes(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size())));
             }
             return out;
           },
           "frames whose last bit has left: [(port, first_bit_cycle, last_bit_cycle, bytes)]")
      .def("next_event",
           [](MediaModel& s) -> py::object {
             uint64_t t = s.media().next_event();
             if (t == UINT64_MAX) return py::none();
             return py::int_(t);
           },
           "earliest cycle with media work, or None")
      .def("advance", [](MediaModel& s, uint64_t t) { s.media().advance(t); }, py::arg("t"))
      .def("idle", [](MediaModel& s) { return s.media().idle(); })
      .def("rx_pending_frames", [](MediaModel& s) { return s.media().rx_pending_frames(); })
      .def("counters",
           [](MediaModel& s) {
             py::list out;
             for (const PortCounters& c : s.media().counters()) out.append(counters_dict(c));
             return out;
           })
      .def(
          "fast_wr",
          [](MediaModel& s, int me, int ctx, uint32_t csr, uint32_t value, uint64_t t) {
            s.media().fast_wr(me, ctx, csr, value, t);
          },
          py::arg("me"), py::arg("ctx"), py::arg("csr"), py::arg("value"), py::arg("t") = 0)
      .def(
          "read",
          [](MediaModel& s, uint32_t addr, int n, uint64_t t) {
            if (n < 1 || n > 4096) throw py::value_error("read: n must be 1..4096");
            std::vector<uint32_t> out(static_cast<size_t>(n));
            s.media().read(addr, out.data(), n, t);
            return out;
          },
          py::arg("addr"), py::arg("n") = 1, py::arg("t") = 0)
      .def(
          "write",
          [](MediaModel& s, uint32_t addr, const std::vector<uint32_t>& words, uint64_t t) {
            if (words.empty()) throw py::value_error("write: no words");
            s.media().write(addr, words.data(), static_cast<int>(words.size()), t);
          },
          py::arg("addr"), py::arg("words"), py::arg("t") = 0)
      .def(
          "rbuf_read",
          [](MediaModel& s, uint32_t addr, size_t n) {
            std::string out(n, '\0');
            s.media().rbuf_copy_out(addr, reinterpret_cast<uint8_t*>(out.data()), n);
            return py::bytes(out);
          },
          py::arg("addr"), py::arg("n"))
      .def(
          "tbuf_write",
          [](MediaModel& s, uint32_t addr, const py::bytes& data) {
            std::string bytes = data;
            s.media().tbuf_copy_in(addr, reinterpret_cast<const uint8_t*>(bytes.data()),
                                   bytes.size());
          },
          py::arg("addr"), py::arg("data"))
      .def("take_autopushes", &MediaModel::take_autopushes,
           "autopushes delivered so far: [(me, ctx, xfer, [word0, word1], sig, when)]")
      .def_property_readonly("num_ports", [](MediaModel& s) { return s.media().num_ports(); })
      .def_property_readonly("rx_partitions",
                             [](MediaModel& s) { return s.media().rx_partitions(); })
      .def_property_readonly("rx_partition_elements",
                             [](MediaModel& s) { return s.media().rx_partition_elements(); })
      .def_property_readonly("tx_partition_elements",
                             [](MediaModel& s) { return s.media().tx_partition_elements(); })
      .def_property_readonly("element_bytes",
                             [](MediaModel& s) { return s.media().element_bytes(); })
      .def_property_readonly("rx_freelists",
                             [](MediaModel& s) { return s.media().rx_freelists(); })
      .def_property_readonly("now", [](MediaModel& s) { return s.media().now(); });
}

}  // namespace npkit
