// The pybind11 module npkit.sim._core: class Core over the Chip, exception SimFault.
// Nothing escapes as a C++ exception: faults become SimFault, bad arguments ValueError or
// IndexError, anything else RuntimeError.
#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "chip.hpp"
#include "config_py.hpp"

namespace py = pybind11;

namespace npkit {
void bind_media(py::module_& m);

namespace {

// The SimFault class object, created once at import and kept for the life of the process.
py::handle& sim_fault_slot() {
  static py::handle cls;
  return cls;
}

const char* kSimFaultSource = R"PY(
class SimFault(RuntimeError):
    """A fault of the simulated chip: kind, me, ctx, pc (-1 when not applicable), message."""

    def __init__(self, kind, me, ctx, pc, message):
        where = ", ".join(f"{n} {v}" for n, v in (("me", me), ("ctx", ctx), ("pc", pc)) if v >= 0)
        super().__init__(f"{kind}: {message}" + (f" ({where})" if where else ""))
        self.kind = kind
        self.me = me
        self.ctx = ctx
        self.pc = pc
        self.message = message

    def __reduce__(self):
        return (type(self), (self.kind, self.me, self.ctx, self.pc, self.message))
)PY";

void raise_fault(const std::string& kind, int me, int ctx, int64_t pc, const std::string& msg) {
  py::object inst = py::reinterpret_borrow<py::object>(sim_fault_slot())(kind, me, ctx, pc, msg);
  PyErr_SetObject(sim_fault_slot().ptr(), inst.ptr());
}

// Python-side owner of a Chip.
struct Core {
  std::unique_ptr<Chip> chip;
};

// A chip snapshot as Python sees it: opaque, immutable, shareable.
struct Snapshot {
  std::shared_ptr<const ChipSnapshot> state;
};

std::vector<uint64_t> words_from(py::handle obj, int me) {
  std::vector<uint64_t> out;
  if (py::isinstance<py::array>(obj)) {
    py::array arr = py::reinterpret_borrow<py::array>(obj);
    if (arr.ndim() != 1) throw py::value_error("load: words must be a 1-dimensional array");
    char kind = arr.dtype().kind();
    if (kind != 'u' && kind != 'i') throw py::value_error("load: words must be an integer array");
    auto u = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(obj);
    if (!u) throw py::error_already_set();
    out.assign(u.data(), u.data() + u.size());
    if (kind == 'i') {
      for (size_t pc = 0; pc < out.size(); ++pc)
        if (static_cast<int64_t>(out[pc]) < 0)
          throw SimError("illegal_instruction", me, -1, static_cast<int64_t>(pc), "negative instruction word");
    }
    return out;
  }
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj))
    throw py::value_error("load: words must be a numpy uint64 array or a list of ints");
  size_t pc = 0;
  for (py::handle item : obj) {
    if (!PyLong_Check(item.ptr())) throw py::value_error("load: word " + std::to_string(pc) + " is not an int");
    unsigned long long v = PyLong_AsUnsignedLongLong(item.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw SimError("illegal_instruction", me, -1, static_cast<int64_t>(pc), "word is not a 40-bit value");
    }
    out.push_back(v);
    ++pc;
  }
  return out;
}

py::dict unit_counters(const Unit& u, uint64_t now) {
  py::dict d;
  d["commands"] = u.commands;
  d["bytes"] = u.bytes;
  d["busy_cycles"] = u.busy_cycles();
  d["utilization"] = now ? u.busy_cycles() / static_cast<double>(now) : 0.0;
  return d;
}

py::list port_counters(Chip& chip);

py::dict counters(Chip& chip) {
  py::dict out;
  uint64_t now = chip.now();
  out["cycles"] = now;
  out["instructions"] = chip.instructions_retired();
  py::list mes;
  for (int i = 0; i < chip.config().num_mes(); ++i) {
    const ME& m = chip.me(i);
    py::dict d;
    d["number"] = m.number;
    d["instructions"] = m.instructions;
    d["busy_cycles"] = m.busy;
    d["idle_cycles"] = m.idle;
    d["stalled_cycles"] = m.stalled;
    py::list ctxs;
    for (int ci = 0; ci < m.contexts; ++ci) {
      py::dict c;
      c["instructions"] = m.ctx[ci].instructions;
      c["executing_cycles"] = chip.ctx_cycles(i, ci, CtxState::Executing);
      c["ready_cycles"] = chip.ctx_cycles(i, ci, CtxState::Ready);
      c["sleeping_cycles"] = chip.ctx_cycles(i, ci, CtxState::Sleeping);
      c["inactive_cycles"] = chip.ctx_cycles(i, ci, CtxState::Inactive);
      ctxs.append(c);
    }
    d["contexts"] = ctxs;
    mes.append(d);
  }
  out["mes"] = mes;
  py::dict channels;
  py::list sram, dram;
  for (const Unit& u : chip.sram_units()) sram.append(unit_counters(u, now));
  for (const Unit& u : chip.dram_units()) dram.append(unit_counters(u, now));
  channels["sram"] = sram;
  channels["dram"] = dram;
  channels["scratch"] = unit_counters(chip.scratch_unit(), now);
  channels["hash"] = unit_counters(chip.hash_unit(), now);
  channels["msf"] = unit_counters(chip.msf_unit(), now);
  out["channels"] = channels;
  py::list rings;
  for (const Ring& r : chip.rings()) {
    py::dict d;
    d["configured"] = r.configured;
    d["count"] = r.count;
    d["high_water"] = r.high_water;
    d["puts"] = r.puts;
    d["gets"] = r.gets;
    rings.append(d);
  }
  out["rings"] = rings;
  out["ports"] = port_counters(chip);
  return out;
}

// The media ports' counters alone: what the facade polls between run slices (frames taken
// off each port's input queue), without building the per-ME and per-context dicts.
py::list port_counters(Chip& chip) {
  py::list ports;
  for (const PortCounters& p : chip.media().counters()) {
    py::dict d;
    d["rx_frames"] = p.rx_frames;
    d["rx_bytes"] = p.rx_bytes;
    d["rx_dropped_rbuf_full"] = p.rx_dropped_rbuf_full;
    d["tx_frames"] = p.tx_frames;
    d["tx_bytes"] = p.tx_bytes;
    d["rbuf_high_water_elements"] = p.rbuf_high_water_elements;
    d["rx_waiting_high_water"] = p.rx_waiting_high_water;
    d["rx_dropped_too_long"] = p.rx_dropped_too_long;
    d["rx_handed"] = p.rx_handed;
    d["rx_mpackets"] = p.rx_mpackets;
    d["rx_flow_control_stalls"] = p.rx_flow_control_stalls;
    d["rbuf_partition_high_water"] = p.rbuf_partition_high_water;
    d["rbuf_elements_in_use"] = p.rbuf_elements_in_use;
    d["tbuf_elements_queued"] = p.tbuf_elements_queued;
    d["tx_elements"] = p.tx_elements;
    d["tx_underruns"] = p.tx_underruns;
    ports.append(d);
  }
  return ports;
}

template <class T>
py::array_t<T> view(py::object owner, T* data, size_t n) {
  return py::array_t<T>({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))}, data, owner);
}

Chip& chip_of(py::object self) { return *self.cast<Core&>().chip; }

void check_index(int v, int n, const char* what) {
  if (v < 0 || v >= n)
    throw py::index_error(std::string(what) + " " + std::to_string(v) + " is out of range 0.." + std::to_string(n - 1));
}

}  // namespace
}  // namespace npkit

PYBIND11_MODULE(_core, m) {
  using namespace npkit;
  m.doc() = "npkit simulator core: the C++ model of an IXP2800-class chip (docs/sim-core.md)";

  py::dict ns;
  ns["__name__"] = "npkit.sim._core";
  py::exec(kSimFaultSource, ns);
  py::object cls = ns["SimFault"];
  cls.inc_ref();  // kept for the life of the process, like any extension's exception type
  sim_fault_slot() = cls;
  m.attr("SimFault") = cls;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SimError& e) {
      raise_fault(e.kind, e.me, e.ctx, e.pc, e.what());
    } catch (const LocalFault& e) {
      raise_fault(e.kind, -1, -1, -1, e.what());
    } catch (const MediaFault& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<Core>(m, "Core")
      .def(py::init([](py::dict config, uint64_t seed) {
             return Core{std::make_unique<Chip>(parse_config(config), seed)};
           }),
           py::arg("config"), py::arg("seed") = 0)
      .def("load",
           [](py::object self, int me, py::object words, int ctx_mode) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             chip.load(me, words_from(words, me), ctx_mode);
           },
           py::arg("me_index"), py::arg("words"), py::arg("ctx_mode") = 8)
      .def("run",
           [](py::object self, int64_t max_cycles, int64_t stop_tx_frames, bool until_idle) {
             if (max_cycles < 0) throw py::value_error("max_cycles must be >= 0");
             Chip& chip = chip_of(self);
             py::gil_scoped_release release;
             return chip.run(static_cast<uint64_t>(max_cycles), stop_tx_frames, until_idle);
           },
           py::arg("max_cycles"), py::arg("stop_tx_frames") = -1, py::arg("until_idle") = false)
      .def_property_readonly("now", [](py::object self) { return chip_of(self).now(); })
      .def("set_schedule", [](py::object self, const std::string& name) { chip_of(self).set_schedule(name); },
           py::arg("name"))
      .def_property_readonly("schedule", [](py::object self) { return std::string(chip_of(self).schedule()); })
      .def_property_readonly("quantum_cycles", [](py::object self) { return chip_of(self).quantum_cycles(); })
      .def_property_readonly("instructions_retired", [](py::object self) { return chip_of(self).instructions_retired(); })
      .def("sram",
           [](py::object self, int ch) {
             size_t n;
             uint32_t* p = chip_of(self).sram_data(ch, n);
             return view(self, p, n);
           },
           py::arg("channel"))
      .def("dram", [](py::object self) { size_t n; uint8_t* p = chip_of(self).dram_data(n); return view(self, p, n); })
      .def("scratch", [](py::object self) { size_t n; uint32_t* p = chip_of(self).scratch_data(n); return view(self, p, n); })
      .def("local_memory",
           [](py::object self, int me) {
             size_t n;
             uint32_t* p = chip_of(self).lm_data(me, n);
             return view(self, p, n);
           },
           py::arg("me"))
      .def("configure_ring",
           [](py::object self, int ring, uint32_t base, uint32_t size) { chip_of(self).configure_ring(ring, base, size); },
           py::arg("ring"), py::arg("base_word"), py::arg("size_words"))
      .def("ring_state",
           [](py::object self, int ring) {
             const Ring& r = chip_of(self).ring(ring);
             py::dict d;
             d["count"] = r.count; d["head"] = r.head; d["tail"] = r.tail; d["base"] = r.base;
             d["size"] = r.size; d["high_water"] = r.high_water; d["puts"] = r.puts; d["gets"] = r.gets;
             d["configured"] = r.configured;
             return d;
           },
           py::arg("ring"))
      .def("ring_put",
           [](py::object self, int ring, const std::vector<uint32_t>& words) { chip_of(self).ring_put(ring, words); },
           py::arg("ring"), py::arg("words"))
      .def("ring_get",
           [](py::object self, int ring, uint32_t count) { return chip_of(self).ring_get(ring, count); },
           py::arg("ring"), py::arg("count"))
      .def("enqueue",
           [](py::object self, int ch, uint32_t q, uint32_t handle) { chip_of(self).enqueue(ch, q, handle); },
           py::arg("channel"), py::arg("queue"), py::arg("handle"))
      .def("dequeue", [](py::object self, int ch, uint32_t q) { return chip_of(self).dequeue(ch, q); },
           py::arg("channel"), py::arg("queue"))
      .def("queue_state",
           [](py::object self, int ch, uint32_t q) {
             const QueueDesc& d = chip_of(self).queue(ch, q);
             py::dict out;
             out["count"] = d.count; out["head"] = d.head; out["tail"] = d.tail;
             return out;
           },
           py::arg("channel"), py::arg("queue"))
      .def("add_rx_frame",
           [](py::object self, int port, py::bytes data, int64_t not_before) {
             Chip& chip = chip_of(self);
             check_index(port, static_cast<int>(chip.config().media.ports.size()), "port");
             std::string s = data;
             chip.add_rx_frame(port, std::vector<uint8_t>(s.begin(), s.end()), not_before);
           },
           py::arg("port"), py::arg("data"), py::arg("not_before_cycle") = -1)
      .def("add_rx_frames",
           [](py::object self, int port, py::list frames, py::list not_before) {
             // One call per feed chunk instead of one per frame.  Every frame is checked
             // before any is queued, so a bad frame leaves the port untouched.
             Chip& chip = chip_of(self);
             check_index(port, static_cast<int>(chip.config().media.ports.size()), "port");
             const size_t n = frames.size();
             if (not_before.size() != n) throw py::value_error("add_rx_frames: frames and not_before differ in length");
             std::vector<std::pair<const char*, Py_ssize_t>> views(n);
             std::vector<int64_t> due(n);
             for (size_t k = 0; k < n; ++k) {
               PyObject* item = frames[k].ptr();
               if (!PyBytes_Check(item)) throw py::type_error("add_rx_frames: frames must be bytes");
               views[k] = {PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item)};
               if (views[k].second < 1 || views[k].second > 0xFFFF)
                 throw py::value_error("add_rx_frame: frame length must be 1..65535 bytes, got " +
                                       std::to_string(views[k].second));
               due[k] = not_before[k].cast<int64_t>();
             }
             for (size_t k = 0; k < n; ++k) {
               const auto* b = reinterpret_cast<const uint8_t*>(views[k].first);
               chip.add_rx_frame(port, std::vector<uint8_t>(b, b + views[k].second), due[k]);
             }
           },
           py::arg("port"), py::arg("frames"), py::arg("not_before_cycles"))
      .def("add_rx_packed",
           [](py::object self, int port,
              const py::array_t<uint8_t, py::array::c_style>& data,
              const py::array_t<int64_t, py::array::c_style>& offsets,
              const py::array_t<int64_t, py::array::c_style>& not_before) {
             // add_rx_frames with the frames packed in one buffer (npkit.sim.frames:
             // frame k is data[offsets[k]:offsets[k + 1]]): no Python object per frame,
             // and the copies into the core made without the GIL.  Every frame is checked
             // before any is queued, so a bad frame leaves the port untouched.
             Chip& chip = chip_of(self);
             check_index(port, static_cast<int>(chip.config().media.ports.size()), "port");
             if (data.ndim() != 1 || offsets.ndim() != 1 || not_before.ndim() != 1 ||
                 offsets.size() < 1)
               throw py::value_error("add_rx_packed: 1-d arrays, at least one offset");
             const size_t n = static_cast<size_t>(offsets.size()) - 1;
             if (static_cast<size_t>(not_before.size()) != n)
               throw py::value_error("add_rx_packed: frames and not_before differ in length");
             const uint8_t* d = data.data();
             const int64_t* o = offsets.data();
             const int64_t* due = not_before.data();
             const int64_t size = static_cast<int64_t>(data.size());
             for (size_t k = 0; k < n; ++k) {
               if (o[k] < 0 || o[k + 1] > size || o[k + 1] < o[k])
                 throw py::value_error("add_rx_packed: offsets outside the buffer or decreasing");
               const int64_t length = o[k + 1] - o[k];
               if (length < 1 || length > 0xFFFF)
                 throw py::value_error("add_rx_frame: frame length must be 1..65535 bytes, got " +
                                       std::to_string(length));
             }
             py::gil_scoped_release released;  // the arrays are the caller's, kept alive
             for (size_t k = 0; k < n; ++k)
               chip.add_rx_frame(port, std::vector<uint8_t>(d + o[k], d + o[k + 1]), due[k]);
           },
           py::arg("port"), py::arg("data"), py::arg("offsets"), py::arg("not_before_cycles"))
      .def("take_tx_packed",
           [](py::object self) {
             // The transmitted frames as arrays: ports int32, first and last bit cycles
             // int64, the frames packed in one uint8 buffer with int64 offsets (n + 1,
             // npkit.sim.frames): no Python object per frame; packed without the GIL.
             Chip& chip = chip_of(self);
             std::vector<int32_t> ports;
             std::vector<int64_t> first, last, offsets{0};
             std::vector<uint8_t> data;
             {
               py::gil_scoped_release released;
               std::vector<TxFrame> done = chip.media().take_tx();
               ports.reserve(done.size());
               first.reserve(done.size());
               last.reserve(done.size());
               offsets.reserve(done.size() + 1);
               size_t bytes = 0;
               for (const TxFrame& f : done) bytes += f.bytes.size();
               data.reserve(bytes);
               for (const TxFrame& f : done) {
                 ports.push_back(f.port);
                 first.push_back(static_cast<int64_t>(f.first_bit_cycle));
                 last.push_back(static_cast<int64_t>(f.last_bit_cycle));
                 data.insert(data.end(), f.bytes.begin(), f.bytes.end());
                 offsets.push_back(static_cast<int64_t>(data.size()));
               }
             }
             return py::make_tuple(py::array_t<int32_t>(ports.size(), ports.data()),
                                   py::array_t<int64_t>(first.size(), first.data()),
                                   py::array_t<int64_t>(last.size(), last.data()),
                                   py::array_t<uint8_t>(data.size(), data.data()),
                                   py::array_t<int64_t>(offsets.size(), offsets.data()));
           })
      .def("take_tx_columns",
           [](py::object self) {
             // The transmitted frames as four parallel lists (port, first bit cycle, last bit
             // cycle, bytes): no tuple per frame.
             std::vector<TxFrame> done = chip_of(self).media().take_tx();
             py::list ports(done.size()), first(done.size()), last(done.size()), data(done.size());
             for (size_t k = 0; k < done.size(); ++k) {
               const TxFrame& f = done[k];
               ports[k] = py::int_(f.port);
               first[k] = py::int_(f.first_bit_cycle);
               last[k] = py::int_(f.last_bit_cycle);
               data[k] = py::bytes(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
             }
             return py::make_tuple(ports, first, last, data);
           })
      .def("take_tx",
           [](py::object self) {
             py::list out;
             for (TxFrame& f : chip_of(self).media().take_tx())
               out.append(py::make_tuple(f.port, f.first_bit_cycle, f.last_bit_cycle,
                                         py::bytes(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size())));
             return out;
           })
      .def("counters", [](py::object self) { return counters(chip_of(self)); })
      .def("port_counters", [](py::object self) { return port_counters(chip_of(self)); })
      .def("set_trace", [](py::object self, bool on) { chip_of(self).set_trace(on); }, py::arg("on"))
      // the per-frame event log and utilisation probe (frame_log.hpp, sim/packet_trace.py)
      .def("enable_frame_log",
           [](py::object self, bool frames, uint64_t max_events, uint32_t first, uint32_t last,
              uint64_t port_mask, uint32_t sample_every, int bucket_shift, bool waits) {
             FrameLogConfig cfg;
             cfg.frames = frames;
             cfg.max_events = max_events;
             cfg.first = first;
             cfg.last = last;
             cfg.port_mask = port_mask;
             cfg.sample_every = sample_every;
             cfg.bucket_shift = bucket_shift;
             cfg.waits = waits;
             chip_of(self).enable_frame_log(cfg);
           },
           py::arg("frames") = true, py::arg("max_events") = 1u << 20, py::arg("first") = 0,
           py::arg("last") = UINT32_MAX, py::arg("port_mask") = ~0ULL, py::arg("sample_every") = 1,
           py::arg("bucket_shift") = 10, py::arg("waits") = false)
      .def("disable_frame_log", [](py::object self) { chip_of(self).set_frame_log(nullptr); })
      .def("set_trace_points",
           [](py::object self, int me, const std::vector<uint32_t>& pcs) {
             chip_of(self).set_trace_points(me, pcs);
           },
           py::arg("me"), py::arg("pcs"))
      .def("take_frame_events",
           [](py::object self) {
             FrameLog* log = chip_of(self).frame_log();
             if (!log) throw std::invalid_argument("take_frame_events: no frame log is attached");
             std::vector<FrameEvent> events = log->take_events();
             return py::bytes(reinterpret_cast<const char*>(events.data()), events.size() * sizeof(FrameEvent));
           },
           "The events recorded since the last take, as bytes of 40-byte records (frame_log.hpp).")
      .def("take_frame_waits",
           [](py::object self) {
             FrameLog* log = chip_of(self).frame_log();
             if (!log) throw std::invalid_argument("take_frame_waits: no frame log is attached");
             auto waits = log->take_waits();
             static_assert(sizeof(FrameLog::Wait) == 16, "sim/packet_trace.py WAIT_DTYPE");
             return py::bytes(reinterpret_cast<const char*>(waits.data()),
                              waits.size() * sizeof(FrameLog::Wait));
           },
           "Ended sleeping intervals as 16-byte records (end cycle, me, ctx, unit).")
      .def("frame_log_status",
           [](py::object self) {
             FrameLog* log = chip_of(self).frame_log();
             if (!log) throw std::invalid_argument("frame_log_status: no frame log is attached");
             py::dict d;
             d["recorded"] = log->recorded();
             d["lost"] = log->lost();
             d["full_at"] = log->full_at();
             d["max_events"] = log->config().max_events;
             d["bucket_cycles"] = uint64_t{1} << log->config().bucket_shift;
             py::list units;
             for (int u = 0; u < log->units(); ++u) units.append(log->unit_name(u));
             d["units"] = units;
             return d;
           })
      .def("utilisation",
           [](py::object self) {
             Chip& chip = chip_of(self);
             FrameLog* log = chip.frame_log();
             if (!log) throw std::invalid_argument("utilisation: no frame log is attached");
             py::dict d;
             py::list mes;
             for (int i = 0; i < chip.config().num_mes(); ++i) {
               const ME& m = chip.me(i);
               if (m.contexts == 0) continue;
               py::dict e;
               e["me"] = i;
               e["busy"] = m.busy;
               e["stalled"] = m.stalled;
               e["idle"] = m.idle;
               py::list wait, ctx_wait;
               for (int u = 0; u < log->units(); ++u) wait.append(log->me_wait(i, u));
               for (int c = 0; c < m.contexts; ++c) {
                 py::list per;
                 for (int u = 0; u < log->units(); ++u) per.append(log->ctx_wait(i, c, u));
                 ctx_wait.append(per);
               }
               e["idle_waiting"] = wait;
               e["ctx_sleeping"] = ctx_wait;
               mes.append(e);
             }
             d["mes"] = mes;
             py::list series;
             for (int u = 0; u < log->units(); ++u) {
               const auto& b = log->backlog(u);
               py::array_t<uint32_t> commands(static_cast<py::ssize_t>(b.size()));
               py::array_t<uint32_t> backlog(static_cast<py::ssize_t>(b.size()));
               auto cw = commands.mutable_unchecked<1>();
               auto bw = backlog.mutable_unchecked<1>();
               for (size_t k = 0; k < b.size(); ++k) {
                 cw(static_cast<py::ssize_t>(k)) = b[k].commands;
                 bw(static_cast<py::ssize_t>(k)) = b[k].max_backlog;
               }
               series.append(py::make_tuple(commands, backlog));
             }
             d["units"] = series;
             return d;
           })
      .def("take_trace",
           [](py::object self) {
             py::list out;
             for (const TraceInterval& t : chip_of(self).take_trace())
               out.append(py::make_tuple(t.me, t.ctx, ctx_state_name(t.state), t.start, t.end));
             return out;
           })
      .def("read_reg",
           [](py::object self, int me, int ctx, uint32_t code) { return chip_of(self).read_reg(me, ctx, code); },
           py::arg("me"), py::arg("ctx"), py::arg("operand_code"))
      .def("write_reg",
           [](py::object self, int me, int ctx, uint32_t code, uint32_t value) {
             chip_of(self).write_reg(me, ctx, code, value);
           },
           py::arg("me"), py::arg("ctx"), py::arg("operand_code"), py::arg("value"))
      .def("read_xfer_out",
           [](py::object self, int me, int ctx, int kind, int index) {
             return chip_of(self).read_xfer_out(me, ctx, kind, index);
           },
           py::arg("me"), py::arg("ctx"), py::arg("kind"), py::arg("index"),
           "Read an *out* transfer register: kind 0 = $ (SRAM), 1 = $$ (DRAM).")
      .def("context",
           [](py::object self, int me, int ctx) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             check_index(ctx, 8, "context");
             const Context& c = chip.me(me).ctx[ctx];
             py::dict d;
             d["pc"] = c.pc;
             d["state"] = ctx_state_name(c.state);
             d["pending_signals"] = c.signals;
             d["wait_mask"] = c.wait_mask;
             d["instructions"] = c.instructions;
             d["condition_codes"] = py::make_tuple(c.z, c.n, c.c, c.v);
             // LM_ADDR_0/1 as the context's next instruction sees them (a pending write
             // that is due counts)
             auto lm = [&](int w) { return c.lm_apply_at[w] <= c.instructions ? c.lm_pending[w] : c.lm_addr[w]; };
             d["lm_addr"] = py::make_tuple(lm(0), lm(1));
             return d;
           },
           py::arg("me"), py::arg("ctx"))
      // ---- debugger hooks (chip.hpp DebugHooks; docs/sim-core.md, "Debug hooks")
      .def("debug_breakpoints",
           [](py::object self, int me, const std::vector<uint32_t>& pcs) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             DebugHooks& d = chip.debug();
             d.breakpoints.resize(static_cast<size_t>(chip.config().num_mes()));
             auto& set = d.breakpoints[static_cast<size_t>(me)];
             for (uint8_t b : set) d.breakpoint_count -= b;
             set.assign(chip.config().control_store_words + 1, 0);
             for (uint32_t pc : pcs) {
               if (pc >= set.size()) throw py::index_error("breakpoint PC " + std::to_string(pc) + " is outside the control store");
               d.breakpoint_count += set[pc] ? 0 : 1;
               set[pc] = 1;
             }
           },
           py::arg("me"), py::arg("pcs"),
           "Replace ME me's breakpoints: run() stops before an instruction at one of pcs.")
      .def("debug_step",
           [](py::object self, int me, int ctx, uint64_t count) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             check_index(ctx, 8, "context");
             DebugHooks& d = chip.debug();
             d.step_me = me;
             d.step_ctx = ctx;
             d.step_left = count;
           },
           py::arg("me"), py::arg("ctx"), py::arg("count") = 1,
           "run() stops after context ctx of ME me retires count more instructions (0: off).")
      .def("debug_watch",
           [](py::object self, int kind, int unit, uint64_t offset, uint64_t bytes) {
             Chip& chip = chip_of(self);
             size_t n = 0, size = 0;  // size: the memory's bytes
             if (kind == 0) {
               check_index(unit, chip.config().sram_channels, "SRAM channel");
               chip.sram_data(unit, n);
               size = 4 * n;
             } else if (kind == 1) {
               chip.dram_data(size);
             } else if (kind == 2) {
               chip.scratch_data(n);
               size = 4 * n;
             } else if (kind == 3) {
               check_index(unit, chip.config().num_mes(), "ME index");
               chip.lm_data(unit, n);
               size = 4 * n;
             } else {
               throw py::value_error("watch kind is 0 SRAM, 1 DRAM, 2 scratch or 3 local memory");
             }
             if (bytes == 0 || offset > size || bytes > size - offset)
               throw py::index_error("watch of " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                                     " is outside the memory (" + std::to_string(size) + " bytes)");
             DebugHooks& d = chip.debug();
             d.watches.push_back(DebugWatch{kind, unit, offset, bytes, {}});
             return d.watches.size() - 1;
           },
           py::arg("kind"), py::arg("unit"), py::arg("offset"), py::arg("bytes"),
           "Watch a byte range; run() stops after an instruction changes it.  Returns its index.")
      .def("debug_clear_watches", [](py::object self) { chip_of(self).debug().watches.clear(); })
      .def("debug_coverage",
           [](py::object self, bool on) {
             Chip& chip = chip_of(self);
             DebugHooks& d = chip.debug();
             d.coverage = on;
             if (on && d.counts.empty())
               d.counts.assign(static_cast<size_t>(chip.config().num_mes()),
                               std::vector<uint64_t>(chip.config().control_store_words + 1, 0));
           },
           py::arg("on"), "Count retired instructions per ME and PC (slower runs while on).")
      .def("debug_counts",
           [](py::object self, int me) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             const DebugHooks& d = chip.debug();
             std::vector<uint64_t> out;
             if (!d.counts.empty()) out = d.counts[static_cast<size_t>(me)];
             return py::array_t<uint64_t>(static_cast<py::ssize_t>(out.size()), out.data());
           },
           py::arg("me"), "A copy of ME me's per-PC retirement counts (empty before coverage is on).")
      .def("debug_stop",
           [](py::object self) {
             const DebugHooks& d = chip_of(self).debug();
             py::dict out;
             out["reason"] = d.stop;
             out["me"] = d.stop_me;
             out["ctx"] = d.stop_ctx;
             out["pc"] = d.stop_pc;
             out["watch"] = d.stop_watch;
             return out;
           },
           "Why the last run stopped early (reason '' when it did not) and where.")
      .def_property(
          "debug_resume",
          [](py::object self) {
            const DebugHooks& d = chip_of(self).debug();
            return py::make_tuple(d.resume_me, d.resume_retired);
          },
          [](py::object self, std::pair<int, uint64_t> v) {
            DebugHooks& d = chip_of(self).debug();
            d.resume_me = v.first;
            d.resume_retired = v.second;
          },
          "(me, instructions retired) of the breakpoint stop the next run passes over once.")
      // ---- lockstep log for the RTL mirror (lockstep.cpp; docs/rtl.md)
      .def_property(
          "lockstep_me",
          [](py::object self) { return chip_of(self).debug().lockstep_me; },
          [](py::object self, int me) {
            Chip& chip = chip_of(self);
            if (me >= 0) check_index(me, chip.config().num_mes(), "ME index");
            DebugHooks& d = chip.debug();
            d.lockstep_me = me < 0 ? -1 : me;
            d.lockstep_log.clear();
          },
          "The ME whose retired instructions and deliveries are logged (-1: none); while set, "
          "run() stops after each instruction of it with reason 'lockstep'.")
      .def("lockstep_corrupt",
           [](py::object self, int me, uint32_t pc) {
             DebugHooks& d = chip_of(self).debug();
             d.corrupt_me = me;
             d.corrupt_pc = pc;
           },
           py::arg("me"), py::arg("pc"),
           "Test only: while in lockstep, flip bit 0 of the GPR the instruction at pc of ME me "
           "writes, each time it retires (me -1: off).")
      .def("lockstep_take",
           [](py::object self) {
             DebugHooks& d = chip_of(self).debug();
             py::list out;
             for (const LockstepRecord& r : d.lockstep_log)
               out.append(py::make_tuple(r.kind, r.time, r.ctx, r.pc, r.counts, r.a, r.b, r.nn_put,
                                         r.next_put, r.next_get, r.ring_full, r.ring_empty));
             d.lockstep_log.clear();
             return out;
           },
           "The log since the last take, oldest first: (kind, time, ctx, pc or signal, counts, "
           "a, b, nn_put, next_put, next_get, ring_full, ring_empty); kind 0 retired, 1 delivery.")
      .def("lockstep_state",
           [](py::object self, int me) {
             Chip& chip = chip_of(self);
             check_index(me, chip.config().num_mes(), "ME index");
             std::vector<uint32_t> st = chip.lockstep_state(me);
             return py::bytes(reinterpret_cast<const char*>(st.data()), st.size() * sizeof(uint32_t));
           },
           py::arg("me"), "ME me's registers, local memory, NN, PCs and condition codes, flat.")
      .def("snapshot",
           [](py::object self) { return Snapshot{chip_of(self).snapshot()}; },
           "A copy of the whole simulated state (docs/sim-core.md, \"Snapshot and restore\").")
      .def("restore",
           [](py::object self, const Snapshot& snap) { chip_of(self).restore(*snap.state); },
           py::arg("snapshot"), "Put back a snapshot this chip took.");

  py::class_<Snapshot>(m, "Snapshot", "The state of a Core at Core.snapshot(); immutable.")
      .def_property_readonly("cycle", [](const Snapshot& s) { return s.state->now_; })
      .def_property_readonly("held_bytes", [](const Snapshot& s) { return s.state->held_bytes(); },
                             "Host bytes the snapshot holds (memory images, copies).");

  bind_media(m);
}
