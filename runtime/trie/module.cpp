// npkit.runtime._trie: the LPM trie updater (trie.hpp) for npkit.runtime.lpm and
// npkit.runtime.route_manager.  Keys cross as Python ints (IPv6: 128 bits), arrays as numpy.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>

#include "poptrie.hpp"
#include "trie.hpp"

namespace py = pybind11;

namespace npkit::trie {
namespace {

constexpr uint64_t kLow64 = ~uint64_t{0};

// A Python int -> 128-bit value; TrieError naming the prefix if it is not a non-negative
// int below 2^128 (the trie then reports values >= 2^key_bits).
u128 to_value(py::handle value, py::handle length, int key_bits) {
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    if (key_bits <= 64) {
      // PyLong_AsUnsignedLong, where it is 64 bits: CPython 3.11's AsUnsignedLongLong goes
      // through _PyLong_AsByteArray for any int of two or more 30-bit digits (most IPv4
      // networks), about 135 instructions; AsUnsignedLong adds the digits directly.
      if constexpr (sizeof(unsigned long) == 8) {
        const unsigned long v = PyLong_AsUnsignedLong(value.ptr());
        if (!(v == static_cast<unsigned long>(-1) && PyErr_Occurred())) return v;
      } else {
        const unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
        if (!(v == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return v;
      }
    } else {
#if PY_VERSION_HEX < 0x030D0000
      // The 16 bytes in one call, no int object made (it raises OverflowError for a
      // negative int or one of 2^128 or more).  3.13 added an argument to this function.
      unsigned char bytes[16];
      if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(value.ptr()), bytes, 16,
                              /*little_endian=*/1, /*is_signed=*/0) == 0) {
        u128 v = 0;
        for (int i = 15; i >= 0; --i) v = v << 8 | bytes[i];
        return v;
      }
#else
      py::object high = py::reinterpret_steal<py::object>(
          PyNumber_Rshift(value.ptr(), py::int_(64).ptr()));
      if (high) {
        const unsigned long long hi = PyLong_AsUnsignedLongLong(high.ptr());
        if (!(hi == static_cast<unsigned long long>(-1) && PyErr_Occurred()))
          return (u128{hi} << 64) | PyLong_AsUnsignedLongLongMask(value.ptr());
      }
#endif
    }
    PyErr_Clear();
  }
  throw TrieError(py::str("bad prefix {!r}/{} for {}-bit keys")
                      .format(value, length, key_bits)
                      .cast<std::string>());
}

int64_t to_int(py::handle value, const char* what) {
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) return v;
    PyErr_Clear();
  }
  throw TrieError(std::string(what) + " " + py::repr(value).cast<std::string>() +
                  " is not a small integer");
}

int to_length(py::handle length, int key_bits) {
  const int64_t v = to_int(length, "prefix length");
  if (v < 0 || v > key_bits)
    throw TrieError("bad prefix length /" + std::to_string(v) + " for " +
                    std::to_string(key_bits) + "-bit keys");
  return static_cast<int>(v);
}

// A 128-bit value as a Python int (for error messages).
py::object to_int_object(u128 v) {
  return py::int_(static_cast<uint64_t>(v >> 64)).attr("__lshift__")(64).attr("__or__")(
      py::int_(static_cast<uint64_t>(v)));
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
  return out;
}

// The Python-facing trie: the updater plus a reference to the numpy words it writes.
class PyTrie {
 public:
  PyTrie(int key_bits, int root_bits, int ply_bits, py::array words, bool log,
         std::shared_ptr<Sequence> sequence)
      : words_(checked(words)),
        trie_(key_bits, root_bits, ply_bits, static_cast<uint32_t*>(words_.mutable_data()),
              static_cast<size_t>(words_.size()), log, std::move(sequence)) {}

  void add(py::handle value, py::handle length, py::handle next_hop) {
    const int bits = trie_.key_bits();
    const u128 v = to_value(value, length, bits);
    trie_.add(v, to_length(length, bits), to_int(next_hop, "next hop"));
  }
  void remove(py::handle value, py::handle length) {
    const int bits = trie_.key_bits();
    const u128 v = to_value(value, length, bits);
    trie_.remove(v, to_length(length, bits));
  }
  py::object lookup(py::handle value) const {
    const int bits = trie_.key_bits();
    const u128 v = to_value(value, py::int_(bits), bits);
    if (bits < 128 && v >> bits != 0)
      throw TrieError("address " + py::repr(value).cast<std::string>() + " is wider than " +
                      std::to_string(bits) + " bits");
    const auto hop = trie_.lookup(v);
    return hop ? py::object(py::int_(*hop)) : py::object(py::none());
  }

  // Bulk: routes as right-aligned (hi, lo) uint64 halves, lengths, next hops.
  using U64s = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;
  using I64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  size_t load(U64s hi, U64s lo, I64s lengths, I64s next_hops) {
    return trie_.load(columns(hi, lo, lengths, next_hops));
  }
  void check(U64s hi, U64s lo, I64s lengths, I64s next_hops) const {
    trie_.check(columns(hi, lo, lengths, next_hops));
  }

  py::tuple routes() const {
    const size_t n = trie_.route_count();
    py::array_t<uint64_t> hi(static_cast<py::ssize_t>(n)), lo(static_cast<py::ssize_t>(n));
    py::array_t<int64_t> lengths(static_cast<py::ssize_t>(n)),
        hops(static_cast<py::ssize_t>(n));
    size_t i = 0;
    uint64_t* h = hi.mutable_data();
    uint64_t* l = lo.mutable_data();
    int64_t* len = lengths.mutable_data();
    int64_t* nh = hops.mutable_data();
    trie_.for_each_route([&](u128 value, int length, uint32_t next_hop) {
      h[i] = static_cast<uint64_t>(value >> 64);
      l[i] = static_cast<uint64_t>(value);
      len[i] = length;
      nh[i] = next_hop;
      ++i;
    });
    return py::make_tuple(hi, lo, lengths, hops);
  }

  py::tuple take_log() {
    WriteLog log = trie_.take_log();
    std::vector<int64_t> barriers(log.barriers.begin(), log.barriers.end());
    return py::make_tuple(to_array(log.indices), to_array(log.values), to_array(barriers));
  }

  py::tuple retired() const {
    const auto items = trie_.retired();
    std::vector<uint32_t> plies;
    std::vector<uint64_t> numbers;
    for (const auto& [ply, number] : items) {
      plies.push_back(ply);
      numbers.push_back(number);
    }
    return py::make_tuple(to_array(plies), to_array(numbers));
  }

  py::dict stats() const {
    const TrieStats s = trie_.stats();
    py::dict out;
    out["routes"] = s.routes;
    out["words_used"] = s.words_used;
    out["plies_live"] = s.plies_live;
    out["plies_retired"] = s.plies_retired;
    out["plies_free"] = s.plies_free;
    out["words_high_water"] = s.words_high_water;
    return out;
  }

  // The updates' work since the last take (TrieCounters), then zeroed.
  py::dict take_counters() {
    const TrieCounters c = trie_.take_counters();
    py::dict out;
    out["updates"] = c.updates;
    out["levels_walked"] = c.levels_walked;
    out["map_probes"] = c.map_probes;
    out["slots_scanned"] = c.slots_scanned;
    out["words_written"] = c.words_written;
    out["plies_allocated"] = c.plies_allocated;
    out["plies_retired"] = c.plies_retired;
    return out;
  }
  // The trie words read (index) and depth bytes read (bit 63: the host word holding them).
  py::array_t<uint64_t> take_trace() { return to_array(trie_.take_trace()); }

  Trie& core() { return trie_; }
  const Trie& core() const { return trie_; }

 private:
  std::vector<Route> columns(U64s hi, U64s lo, I64s lengths, I64s next_hops) const {
    const auto n = static_cast<size_t>(lengths.size());
    if (static_cast<size_t>(hi.size()) != n || static_cast<size_t>(lo.size()) != n ||
        static_cast<size_t>(next_hops.size()) != n)
      throw TrieError("load: the route columns differ in length");
    std::vector<Route> routes(n);
    const int bits = trie_.key_bits();
    for (size_t i = 0; i < n; ++i) {
      const int64_t length = lengths.data()[i];
      if (length < 0 || length > bits)
        throw TrieError("bad prefix length /" + std::to_string(length) + " for " +
                        std::to_string(bits) + "-bit keys");
      routes[i] = Route{(u128{hi.data()[i]} << 64) | lo.data()[i], static_cast<int>(length),
                        next_hops.data()[i]};
    }
    return routes;
  }

 public:
  static py::array checked(py::array words) {
    if (!py::isinstance<py::array_t<uint32_t>>(words) || words.ndim() != 1 ||
        !(words.flags() & py::array::c_style) || !words.writeable())
      throw TrieError("the trie needs a writable, contiguous, one-dimensional uint32 array");
    if (reinterpret_cast<uintptr_t>(words.data()) % alignof(uint32_t) != 0)
      throw TrieError("the trie's uint32 array is not 4-byte aligned");
    return words;
  }

 private:
  py::array words_;
  Trie trie_;
};

// The Poptrie image updater (poptrie.hpp) over numpy words: the chip memory (or its
// shadow) and the host trie's words, both kept alive here.
class PyPoptrie {
 public:
  PyPoptrie(py::array words, py::array host, int direct_bits, bool log, py::object core,
            int key_bits)
      : words_(PyTrie::checked(words)),
        host_(PyTrie::checked(host)),
        image_(static_cast<uint32_t*>(words_.mutable_data()), static_cast<size_t>(words_.size()),
               static_cast<const uint32_t*>(host_.data()), static_cast<size_t>(host_.size()),
               direct_bits, log),
        core_obj_(std::move(core)),
        core_(core_obj_.cast<PyTrie&>().core()),
        key_bits_(key_bits),
        pad_(core_.key_bits() - key_bits),
        direct_bits_(direct_bits) {
    if (key_bits < 1 || key_bits > 128 || pad_ < 0)
      throw TrieError("bad Poptrie key bits " + std::to_string(key_bits));
    if (core_.words() == host_.data()) image_.set_host_trie(&core_);
  }

  // One update: the host trie, then the image; on a full memory the host trie is restored.
  void add(py::handle value, py::handle length, py::handle next_hop) {
    const auto [v, len] = prefix(value, length);
    add_value(v, len, to_int(next_hop, "next hop"));
  }
  void remove(py::handle value, py::handle length) {
    const auto [v, len] = prefix(value, length);
    remove_value(v, len);
  }
  // The same for a prefix already converted (apply_columns): `v` right-aligned.
  void add_value(u128 v, int len, int64_t hop) {
    if (hop < 0 || hop > kNextHopMask)
      throw TrieError("next hop " + std::to_string(hop) + " out of range 0..65535");
    const u128 host_key = v << pad_;
    core_.prefetch_route(host_key, len);
    image_.touch_path(v << (128 - key_bits_), len);
    // (The prefix and next hop are checked: prefix() or checked_prefix() and above; the
    // host trie's key is the same prefix `pad_` bits further left, so its checks hold.)
    const std::optional<uint32_t> old = core_.route_checked(host_key, len);
    const HostMarks marking(core_, image_.row_marks(), len >= direct_bits_);
    const uint64_t written = core_.words_written();
    core_.add_checked(host_key, len, static_cast<uint32_t>(hop));
    update(v, len, host_key, old, len >= direct_bits_, written);
  }
  void remove_value(u128 v, int len) {
    const u128 host_key = v << pad_;
    core_.prefetch_route(host_key, len);
    core_.prefetch_cover(host_key, len);
    image_.touch_path(v << (128 - key_bits_), len);
    const std::optional<uint32_t> old = core_.route_checked(host_key, len);  // (as in add)
    if (!old)
      throw TrieError(py::str("no route {}/{} to delete").format(to_int_object(v), len)
                          .cast<std::string>());
    const HostMarks marking(core_, image_.row_marks(), len >= direct_bits_);
    const uint64_t written = core_.words_written();
    core_.remove_checked(host_key, len);
    update(v, len, host_key, old, len >= direct_bits_, written);
  }
  // Start loading what a later update of the prefix (`v` right-aligned, unchecked) reads
  // first: its route map slot and direct entries.
  void prefetch(u128 v, int64_t len) const {
    if (len < 0 || len > key_bits_) return;
    core_.prefetch_route(v << pad_, static_cast<int>(len));
    image_.prefetch_entries(v << (128 - key_bits_));
  }
  // A column batch's prefix: `v` right-aligned, checked as prefix() checks a Python one.
  std::pair<u128, int> checked_prefix(u128 v, int64_t length) const {
    if (length < 0 || length > key_bits_)
      throw TrieError("bad prefix length /" + std::to_string(length) + " for " +
                      std::to_string(key_bits_) + "-bit keys");
    const int len = static_cast<int>(length);
    const u128 host_bits = len == 128 ? u128{0} : (~u128{0} >> len) >> (128 - key_bits_);
    if ((key_bits_ < 128 && v >> key_bits_ != 0) || (v & host_bits) != 0)
      throw TrieError(py::str("bad prefix {!r}/{} for {}-bit keys")
                          .format(to_int_object(v), len, key_bits_)
                          .cast<std::string>());
    return {v, len};
  }

  void refresh(uint64_t hi, uint64_t lo, int length) {
    if (length < 0 || length > 128) throw TrieError("bad prefix length");
    image_.refresh((u128{hi} << 64) | lo, length);
  }
  py::tuple take_log() {
    WriteLog log = image_.take_log();
    std::vector<int64_t> barriers(log.barriers.begin(), log.barriers.end());
    return py::make_tuple(to_array(log.indices), to_array(log.values), to_array(barriers));
  }
  py::dict stats() const {
    const PoptrieStats s = image_.stats();
    py::dict out;
    out["live_words"] = s.live_words;
    out["retired_words"] = s.retired_words;
    out["free_words"] = s.free_words;
    out["next_free"] = s.next_free;
    return out;
  }
  PoptrieImage& image() { return image_; }
  const PoptrieImage& image() const { return image_; }

 private:
  std::pair<u128, int> prefix(py::handle value, py::handle length) const {
    const u128 v = to_value(value, length, key_bits_);
    const int len = to_length(length, key_bits_);
    const u128 host_bits = len == 128 ? u128{0} : (~u128{0} >> len) >> (128 - key_bits_);
    if ((key_bits_ < 128 && v >> key_bits_ != 0) || (v & host_bits) != 0)
      throw TrieError(py::str("bad prefix {!r}/{} for {}-bit keys")
                          .format(py::reinterpret_borrow<py::object>(value), len, key_bits_)
                          .cast<std::string>());
    return {v, len};
  }
  // While the host trie updates, it marks the rows (64 words) it changes for the image
  // updater: a bit per changed row (RowMarks), no write log; cleared after the update.
  // Not for a prefix shorter than the direct array's bits (`on` false): the nodes it
  // reaches are those whose rows it painted (the others are skipped by their subtree
  // minimum), so the marks would save no scan (IPv4 38.0.0.0/8: 24,157 host words read
  // either way).
  class HostMarks {
   public:
    HostMarks(Trie& core, RowMarks& marks, bool on) : core_(core), marks_(marks) {
      if (on) core.set_row_marks(&marks);
    }
    ~HostMarks() {
      core_.set_row_marks(nullptr);
      marks_.clear();
    }
    HostMarks(const HostMarks&) = delete;
    HostMarks& operator=(const HostMarks&) = delete;

   private:
    Trie& core_;
    RowMarks& marks_;
  };

  // `written`: the host trie's words_written() before its update.
  void update(u128 v, int len, u128 host_key, std::optional<uint32_t> old, bool marked,
              uint64_t written) {
    core_.reclaim(core_.sequence());  // the host trie has no concurrent readers
    // The host trie's changed words, for the XScale cost model: its own count, which it
    // keeps with or without a write log (until 2026-11-28 this counted the log's entries,
    // so a table without the log counted none).
    host_words_written_ += core_.words_written() - written;
    if (core_.logging()) {  // its log, dropped here: traced when tracing
      core_.swap_log(host_writes_);
      if (tracing_)
        for (const uint32_t index : host_writes_.indices)
          host_trace_.push_back(kHostTrace | index);
    }
    try {
      image_.refresh_update(v << (128 - key_bits_), len, marked);
    } catch (const TrieError&) {
      core_.set_row_marks(nullptr);
      if (old)
        core_.add(host_key, len, *old);
      else
        core_.remove(host_key, len);
      core_.reclaim(core_.sequence());
      throw;
    }
  }

  py::array words_;
  py::array host_;
  PoptrieImage image_;
  py::object core_obj_;  // keeps the host trie alive
  Trie& core_;
  int key_bits_;
  int pad_;
  int direct_bits_;
  uint64_t host_words_written_ = 0;
  WriteLog host_writes_;  // the host trie's writes of the update (buffers reused)
  bool tracing_ = false;
  std::vector<uint64_t> host_trace_;

 public:
  // The updates' work since the last take (UpdateCounters, plus the words the host trie
  // changed), then zeroed.
  py::dict take_counters() {
    const UpdateCounters c = image_.take_counters();
    py::dict out;
    out["updates"] = c.updates;
    out["entries"] = c.entries;
    out["nodes_visited"] = c.nodes_visited;
    out["host_words_read"] = c.host_words_read;
    out["image_words_read"] = c.image_words_read;
    out["words_written"] = c.words_written;
    out["blocks_allocated"] = c.blocks_allocated;
    out["blocks_retired"] = c.blocks_retired;
    out["host_words_written"] = host_words_written_;
    host_words_written_ = 0;
    return out;
  }
  void set_trace(bool on) {
    tracing_ = on;
    host_trace_.clear();
    image_.set_trace(on);
  }
  // The words read since the last take: host trie words written first (they are read
  // before being painted), then the image updater's reads; bit 63 marks host trie words.
  py::array_t<uint64_t> take_trace() {
    std::vector<uint64_t> out;
    std::swap(out, host_trace_);
    const std::vector<uint64_t> image = image_.take_trace();
    out.insert(out.end(), image.begin(), image.end());
    return to_array(out);
  }
};

// A batch of RouteUpdate-like objects (op, family, network, length, next_hop), applied in
// order: check(family) first, then add(family, network, length, next_hop) or
// remove(family, network, length).  Returns how many were applied; on an error the updates
// before the failing one stay (TrieError naming it).  Tables' and PoptrieTables' apply.
template <class Check, class Add, class Remove>
size_t apply_updates(py::iterable updates, Check&& check, Add&& add, Remove&& remove) {
  const py::str op_name("op"), family_name("family"), network_name("network"),
      length_name("length"), next_hop_name("next_hop");
  size_t applied = 0;
  for (py::handle update : updates) {
    try {
      const py::object op = update.attr(op_name);
      const py::object family = update.attr(family_name);
      check(family);
      const py::object network = update.attr(network_name);
      const py::object length = update.attr(length_name);
      if (PyUnicode_Check(op.ptr()) && PyUnicode_CompareWithASCIIString(op.ptr(), "add") == 0) {
        const py::object next_hop = update.attr(next_hop_name);
        if (next_hop.is_none()) throw TrieError("an add needs a next hop");
        add(family, network, length, next_hop);
      } else if (PyUnicode_Check(op.ptr()) &&
                 PyUnicode_CompareWithASCIIString(op.ptr(), "delete") == 0) {
        remove(family, network, length);
      } else {
        throw TrieError("op " + py::repr(op).cast<std::string>() + " is not 'add' or 'delete'");
      }
    } catch (const TrieError& e) {
      throw TrieError("update " + std::to_string(applied) + " of the batch: " + e.what() +
                      " (the " + std::to_string(applied) + " update(s) before it stay applied)");
    }
    ++applied;
  }
  return applied;
}

// The IPv4 and IPv6 Poptries of a route manager (either may be None), with the cheap
// calls dispatched here as in Tables, and one numbering of the updates of both families:
// each Poptrie numbers its own updates (its retired blocks carry those numbers), so per
// family the marks (global number, the family's number after it) map reclaim(upto) to
// each family's last update numbered <= upto.
class PoptrieTables {
 public:
  PoptrieTables(py::object v4, py::object v6) : v4_obj_(v4), v6_obj_(v6) {
    tables_[0] = v4.is_none() ? nullptr : v4.cast<PyPoptrie*>();
    tables_[1] = v6.is_none() ? nullptr : v6.cast<PyPoptrie*>();
    for (int i = 0; i < 2; ++i)
      if (tables_[i]) seen_[i] = tables_[i]->image().number();
  }

  int slot(py::handle family) const { return slot_of(to_int(family, "family")); }
  int slot_of(int64_t f) const {
    const int i = f == 4 ? 0 : f == 6 ? 1 : -1;
    if (i >= 0 && tables_[i] != nullptr) return i;
    if (i >= 0)
      throw TrieError("there is no IPv" + std::to_string(f) +
                      " table (no trie memory was given for it)");
    throw TrieError("family " + std::to_string(f) + " is not 4 or 6");
  }

  void add(py::handle family, py::handle network, py::handle length, py::handle next_hop) {
    const int i = slot(family);
    try {
      tables_[i]->add(network, length, next_hop);
    } catch (...) {
      mark(i, 1);  // a failed update that already retired blocks is numbered too
      throw;
    }
    mark(i, 1);
  }
  void remove(py::handle family, py::handle network, py::handle length) {
    const int i = slot(family);
    try {
      tables_[i]->remove(network, length);
    } catch (...) {
      mark(i, 1);
      throw;
    }
    mark(i, 1);
  }
  // After a whole-table operation in Python: number the family's updates since the last
  // mark as `count` updates (negative: as many as the Poptrie numbered).
  void record(py::handle family, int64_t count) { mark(slot(family), count); }

  void reclaim(py::handle upto) {
    for (int i = 0; i < 2; ++i) {
      if (tables_[i] == nullptr) continue;
      PoptrieImage& image = tables_[i]->image();
      if (upto.is_none()) {
        image.reclaim(image.number());
        marks_[i].clear();
        continue;
      }
      const auto limit = static_cast<uint64_t>(to_int(upto, "upto"));
      auto& marks = marks_[i];
      size_t k = 0;  // marks before position k have global numbers <= limit
      while (k < marks.size() && marks[k].first <= limit) ++k;
      if (k == 0) continue;
      image.reclaim(marks[k - 1].second);
      marks.erase(marks.begin(), marks.begin() + static_cast<std::ptrdiff_t>(k - 1));
    }
  }

  size_t apply(py::iterable updates) {
    return apply_updates(
        updates, [&](py::handle family) { slot(family); },
        [&](py::handle f, py::handle n, py::handle l, py::handle h) { add(f, n, l, h); },
        [&](py::handle f, py::handle n, py::handle l) { remove(f, n, l); });
  }

  // A batch as columns, applied in order in one call, with no Python object per update:
  // ops (1 add, 0 delete), families (4 or 6), networks as right-aligned 64-bit halves (hi,
  // lo), lengths, next hops (read for adds only).  Returns how many were applied; on an
  // error (LpmError naming the update) the updates before it stay applied.
  using U64s = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;
  using I64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  size_t apply_columns(I64s ops, I64s families, U64s hi, U64s lo, I64s lengths,
                       I64s next_hops) {
    const auto n = static_cast<size_t>(ops.size());
    for (const py::ssize_t size : {families.size(), hi.size(), lo.size(), lengths.size(),
                                   next_hops.size()})
      if (static_cast<size_t>(size) != n)
        throw TrieError("apply_columns: the columns differ in length");
    const int64_t* op = ops.data();
    const int64_t* family = families.data();
    const uint64_t* high = hi.data();
    const uint64_t* low = lo.data();
    const int64_t* length = lengths.data();
    const int64_t* hop = next_hops.data();
    size_t applied = 0;
    // Each update's first reads (route map slot, direct entries) are cache misses on a
    // large table: start them kAhead updates early (2: a delete and the add back of one
    // prefix come in pairs), while the updates before run.
    constexpr size_t kAhead = 2;
    for (size_t u = 0; u < n; ++u) {
      if (u + kAhead < n) {
        const size_t w = u + kAhead;
        const int t = family[w] == 4 ? 0 : family[w] == 6 ? 1 : -1;
        if (t >= 0 && tables_[t] != nullptr)
          tables_[t]->prefetch((u128{high[w]} << 64) | low[w], length[w]);
      }
      int i = -1;
      try {
        i = slot_of(family[u]);
        PyPoptrie& table = *tables_[i];
        const auto [v, len] = table.checked_prefix((u128{high[u]} << 64) | low[u], length[u]);
        if (op[u] == 1)
          table.add_value(v, len, hop[u]);
        else if (op[u] == 0)
          table.remove_value(v, len);
        else
          throw TrieError("op " + std::to_string(op[u]) + " is not 1 (add) or 0 (delete)");
      } catch (const TrieError& e) {
        if (i >= 0) mark(i, 1);  // a failed update that already retired blocks is numbered
        throw TrieError("update " + std::to_string(applied) + " of the batch: " + e.what() +
                        " (the " + std::to_string(applied) +
                        " update(s) before it stay applied)");
      }
      mark(i, 1);
      ++applied;
    }
    return applied;
  }

  uint64_t sequence() const { return sequence_; }

 private:
  void mark(int i, int64_t count) {
    const uint64_t number = tables_[i]->image().number();
    const uint64_t done = number - seen_[i];
    if (done == 0) return;
    sequence_ += count < 0 ? done : static_cast<uint64_t>(count);
    seen_[i] = number;
    marks_[i].emplace_back(sequence_, number);
  }

  py::object v4_obj_, v6_obj_;  // keep the Poptries alive
  PyPoptrie* tables_[2];
  uint64_t seen_[2] = {0, 0};
  std::deque<std::pair<uint64_t, uint64_t>> marks_[2];
  uint64_t sequence_ = 0;
};

// The IPv4 and IPv6 tries of a route manager (either may be None), with the calls that
// must be cheap (one update per call) dispatched here rather than in Python.
class Tables {
 public:
  Tables(py::object v4, py::object v6) : v4_obj_(v4), v6_obj_(v6) {
    v4_ = v4.is_none() ? nullptr : v4.cast<PyTrie*>();
    v6_ = v6.is_none() ? nullptr : v6.cast<PyTrie*>();
  }

  PyTrie& table(py::handle family) const {
    const int64_t f = to_int(family, "family");
    PyTrie* trie = f == 4 ? v4_ : f == 6 ? v6_ : nullptr;
    if (trie != nullptr) return *trie;
    if (f == 4 || f == 6)
      throw TrieError("there is no IPv" + std::to_string(f) +
                      " table (no trie memory was given for it)");
    throw TrieError("family " + std::to_string(f) + " is not 4 or 6");
  }

  void add(py::handle family, py::handle network, py::handle length, py::handle next_hop) {
    table(family).add(network, length, next_hop);
  }
  void remove(py::handle family, py::handle network, py::handle length) {
    table(family).remove(network, length);
  }
  void reclaim(py::handle upto) {
    for (PyTrie* trie : {v4_, v6_}) {
      if (trie == nullptr) continue;
      Trie& core = trie->core();
      core.reclaim(upto.is_none() ? core.sequence()
                                  : static_cast<uint64_t>(to_int(upto, "upto")));
    }
  }

  // A batch of RouteUpdate-like objects (op, family, network, length, next_hop), in order.
  // Returns how many were applied; on an error, the updates before the failing one stay.
  size_t apply(py::iterable updates) {
    return apply_updates(
        updates, [&](py::handle family) { table(family); },
        [&](py::handle f, py::handle n, py::handle l, py::handle h) { table(f).add(n, l, h); },
        [&](py::handle f, py::handle n, py::handle l) { table(f).remove(n, l); });
  }

 private:
  py::object v4_obj_, v6_obj_;  // keep the tries alive
  PyTrie* v4_;
  PyTrie* v6_;
};

// ---- PoptrieTables' per-update calls as plain CPython fast calls ----
// pybind11's dispatch of a method on a Python subclass (PoptrieRouteManager) costs about
// 150 ns per call on this box (`reclaim()`: 184 ns, `len(())`: 32 ns, timeit, both through
// a lambda), a tenth of an IPv6 update; one update per call pays it twice (the update and
// `reclaim()`).  So `add`, `delete` and `reclaim` are METH_FASTCALL methods that find the
// C++ object directly (the class has one pybind11 base: the simple instance layout) and
// raise LpmError as pybind11's translation does.

PyObject* lpm_error = nullptr;  // the module's LpmError, set once at import

// Positional and keyword arguments into `out` by `names`; the first `required` are needed,
// the rest default to None.  False (a TypeError set) on a bad call.
bool bind_arguments(const char* function, const char* const* names, int count, int required,
                    PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                    PyObject** out) {
  if (kwnames == nullptr && nargs >= required && nargs <= count) {  // positional only
    for (int i = 0; i < count; ++i) out[i] = i < nargs ? args[i] : Py_None;
    return true;
  }
  if (nargs > count) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments", function, count);
    return false;
  }
  for (int i = 0; i < count; ++i) out[i] = i < nargs ? args[i] : nullptr;
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int i = 0;
    while (i < count && PyUnicode_CompareWithASCIIString(key, names[i]) != 0) ++i;
    if (i == count || out[i] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected or repeated argument %R",
                   function, key);
      return false;
    }
    out[i] = args[nargs + k];
  }
  for (int i = 0; i < count; ++i) {
    if (out[i] != nullptr) continue;
    if (i < required) {
      PyErr_Format(PyExc_TypeError, "%s() missing argument '%s'", function, names[i]);
      return false;
    }
    out[i] = Py_None;
  }
  return true;
}

PoptrieTables* tables_of(PyObject* self) {
  auto* instance = reinterpret_cast<py::detail::instance*>(self);
  if (!instance->simple_layout || !instance->simple_holder_constructed) {
    PyErr_SetString(PyExc_TypeError, "PoptrieTables.__init__ was not called");
    return nullptr;
  }
  return static_cast<PoptrieTables*>(instance->simple_value_holder[0]);
}

template <class Call>
PyObject* run(PyObject* self, Call&& call) {
  PoptrieTables* tables = tables_of(self);
  if (tables == nullptr) return nullptr;
  try {
    call(*tables);
  } catch (const TrieError& e) {
    PyErr_SetString(lpm_error, e.what());
    return nullptr;
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* fast_add(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"family", "network", "length", "next_hop"};
  PyObject* a[4];
  if (!bind_arguments("add", names, 4, 4, args, nargs, kwnames, a)) return nullptr;
  return run(self, [&](PoptrieTables& t) { t.add(a[0], a[1], a[2], a[3]); });
}

PyObject* fast_delete(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                      PyObject* kwnames) {
  static const char* const names[] = {"family", "network", "length"};
  PyObject* a[3];
  if (!bind_arguments("delete", names, 3, 3, args, nargs, kwnames, a)) return nullptr;
  return run(self, [&](PoptrieTables& t) { t.remove(a[0], a[1], a[2]); });
}

PyObject* fast_reclaim(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames) {
  static const char* const names[] = {"upto"};
  PyObject* a[1];
  if (!bind_arguments("reclaim", names, 1, 0, args, nargs, kwnames, a)) return nullptr;
  return run(self, [&](PoptrieTables& t) { t.reclaim(a[0]); });
}

PyMethodDef fast_methods[] = {
    {"add", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_add)),
     METH_FASTCALL | METH_KEYWORDS,
     "add(family, network, length, next_hop): add a route, or give an existing one a new "
     "next hop."},
    {"delete", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_delete)),
     METH_FASTCALL | METH_KEYWORDS,
     "delete(family, network, length): delete a route (LpmError if there is none)."},
    {"reclaim", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_reclaim)),
     METH_FASTCALL | METH_KEYWORDS,
     "reclaim(upto=None): the grace period of the updates numbered <= upto (default: all so "
     "far) is over: the blocks they retired become reusable."},
};

}  // namespace
}  // namespace npkit::trie

PYBIND11_MODULE(_trie, m) {
  using namespace npkit::trie;
  m.doc() = "npkit LPM trie updater: route updates in place on the trie words (docs/lpm.md)";
  lpm_error = py::register_exception<TrieError>(m, "LpmError", PyExc_ValueError).ptr();

  py::class_<PyPoptrie>(m, "PoptrieImage")
      .def(py::init<py::array, py::array, int, bool, py::object, int>(), py::arg("words"),
           py::arg("host"), py::arg("direct_bits"), py::arg("log"), py::arg("core"),
           py::arg("key_bits"))
      .def("add", &PyPoptrie::add, py::arg("network"), py::arg("length"), py::arg("next_hop"))
      .def("delete", &PyPoptrie::remove, py::arg("network"), py::arg("length"))
      .def("refresh", &PyPoptrie::refresh, py::arg("hi"), py::arg("lo"), py::arg("length"))
      .def("build", [](PyPoptrie& p) { p.image().build(); })
      .def("clear", [](PyPoptrie& p) { p.image().clear(); })
      .def(
          "reclaim",
          [](PyPoptrie& p, py::handle upto) {
            p.image().reclaim(upto.is_none() ? p.image().number()
                                             : static_cast<uint64_t>(to_int(upto, "upto")));
          },
          py::arg("upto") = py::none())
      .def("take_log", &PyPoptrie::take_log)
      .def("stats", &PyPoptrie::stats)
      .def("take_counters", &PyPoptrie::take_counters)
      .def("set_trace", &PyPoptrie::set_trace, py::arg("on"))
      .def("take_trace", &PyPoptrie::take_trace)
      .def("retired", [](const PyPoptrie& p) { return p.image().retired(); })
      .def_property_readonly("number", [](const PyPoptrie& p) { return p.image().number(); });

  auto poptrie_tables = py::class_<PoptrieTables>(m, "PoptrieTables")
      .def(py::init<py::object, py::object>(), py::arg("v4"), py::arg("v6"))
      .def("add", &PoptrieTables::add, py::arg("family"), py::arg("network"),
           py::arg("length"), py::arg("next_hop"),
           "Add a route, or give an existing one a new next hop.")
      .def("delete", &PoptrieTables::remove, py::arg("family"), py::arg("network"),
           py::arg("length"), "Delete a route (LpmError if there is none).")
      .def("reclaim", &PoptrieTables::reclaim, py::arg("upto") = py::none(),
           "The grace period of the updates numbered <= upto (default: all so far) is "
           "over: the blocks they retired become reusable.")
      .def("apply", &PoptrieTables::apply, py::arg("updates"),
           "Apply a batch in order, in one call; returns how many were applied.  On an "
           "error (LpmError naming the update) the updates before it stay applied.")
      .def("apply_columns", &PoptrieTables::apply_columns, py::arg("ops"),
           py::arg("families"), py::arg("hi"), py::arg("lo"), py::arg("lengths"),
           py::arg("next_hops"),
           "A batch as columns, in order, in one call (no Python object per update): ops "
           "(1 add, 0 delete), families (4 or 6), networks as right-aligned uint64 halves "
           "hi and lo, lengths, next hops (read for adds).  Returns how many were applied; "
           "on an error (LpmError naming the update) the updates before it stay applied.")
      .def("record", &PoptrieTables::record, py::arg("family"), py::arg("count"),
           "Number the family's updates since the last mark as `count` updates "
           "(negative: as many as its Poptrie numbered).")
      .def_property_readonly("sequence", &PoptrieTables::sequence,
                             "How many updates have been applied (numbered 1, 2, ...).");
  // The per-update calls as fast calls (see fast_methods), replacing pybind11's.
  for (PyMethodDef& def : fast_methods) {
    py::object method = py::reinterpret_steal<py::object>(
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(poptrie_tables.ptr()), &def));
    if (!method) throw py::error_already_set();
    py::setattr(poptrie_tables, def.ml_name, method);
  }

  py::class_<Sequence, std::shared_ptr<Sequence>>(m, "Sequence")
      .def(py::init<>())
      .def_property_readonly("value", [](const Sequence& s) { return s.value; });

  py::class_<PyTrie>(m, "Trie")
      .def(py::init<int, int, int, py::array, bool, std::shared_ptr<Sequence>>(),
           py::arg("key_bits"), py::arg("root_bits"), py::arg("ply_bits"), py::arg("words"),
           py::arg("log") = false, py::arg("sequence") = nullptr)
      .def("add", &PyTrie::add, py::arg("network"), py::arg("length"), py::arg("next_hop"))
      .def("delete", &PyTrie::remove, py::arg("network"), py::arg("length"))
      .def("lookup", &PyTrie::lookup, py::arg("address"))
      .def("load", &PyTrie::load, py::arg("hi"), py::arg("lo"), py::arg("lengths"),
           py::arg("next_hops"))
      .def("check", &PyTrie::check, py::arg("hi"), py::arg("lo"), py::arg("lengths"),
           py::arg("next_hops"))
      .def("clear", [](PyTrie& t) { t.core().clear(); })
      .def(
          "reclaim",
          [](PyTrie& t, py::handle upto) {
            // None: every update so far (the common call, kept cheap)
            t.core().reclaim(upto.is_none() ? t.core().sequence()
                                            : static_cast<uint64_t>(to_int(upto, "upto")));
          },
          py::arg("upto") = py::none())
      .def("routes", &PyTrie::routes)
      .def("take_log", &PyTrie::take_log)
      .def("retired", &PyTrie::retired)
      .def("stats", &PyTrie::stats)
      .def("take_counters", &PyTrie::take_counters)
      .def("set_trace", [](PyTrie& t, bool on) { t.core().set_trace(on); }, py::arg("on"))
      .def("take_trace", &PyTrie::take_trace)
      .def_property_readonly("route_count", [](const PyTrie& t) { return t.core().route_count(); })
      .def_property_readonly("words_used",
                             [](const PyTrie& t) { return t.core().stats().words_used; })
      .def_property_readonly("max_length", [](const PyTrie& t) { return t.core().max_length(); })
      .def_property_readonly("logging", [](const PyTrie& t) { return t.core().logging(); })
      .def_property_readonly("sequence", [](const PyTrie& t) { return t.core().sequence(); });

  py::class_<Tables>(m, "Tables")
      .def(py::init<py::object, py::object>(), py::arg("v4"), py::arg("v6"))
      .def("add", &Tables::add, py::arg("family"), py::arg("network"), py::arg("length"),
           py::arg("next_hop"), "Add a route, or give an existing one a new next hop.")
      .def("delete", &Tables::remove, py::arg("family"), py::arg("network"), py::arg("length"),
           "Delete a route (LpmError if there is none); its addresses fall back to the next "
           "shorter covering route.")
      .def("reclaim", &Tables::reclaim, py::arg("upto") = py::none(),
           "The grace period of updates numbered <= upto (default: all so far) is over: the "
           "plies they unlinked become reusable.")
      .def("apply", &Tables::apply, py::arg("updates"),
           "Apply a batch in order, in one call; returns how many were applied.  On an "
           "error (LpmError naming the update) the updates before it stay applied.");

}
