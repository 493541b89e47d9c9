// The multibit LPM trie's updater (docs/lpm.md): single-route adds and deletes, reloads,
// grace-period reclaim and an ordered write log, in place on the trie's 32-bit words.
//
// Word format (read by microblocks/lpm.mbl): bit 31 CHILD (low 31 bits: a ply's word
// offset), bit 30 ROUTE (low 16 bits: next hop), 0: no route.  The root indexes the top
// root_bits of the key, every ply the next ply_bits.  Leaves are pushed: every slot holds
// the answer of the longest prefix covering it.  Host-side only, `depth` keeps 1 + the
// length of the prefix behind each slot (0: none), which updates need and lookups do not.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "huge_pages.hpp"

namespace npkit::trie {

using u128 = unsigned __int128;

inline constexpr uint32_t kChild = 1u << 31;
inline constexpr uint32_t kRoute = 1u << 30;
inline constexpr uint32_t kNextHopMask = 0xFFFF;
inline constexpr uint32_t kPointerMask = kChild - 1;
inline constexpr int kMaxLevels = 128;

// A bad prefix, a missing route, a full memory: raised to Python as LpmError.
struct TrieError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Updates applied so far; shared by the tries of one route manager, so that one number
// orders the updates of both families (retired plies are tagged with it).
struct Sequence {
  uint64_t value = 0;
};

// One route of a bulk load: `value` right-aligned (< 2^key_bits).
struct Route {
  u128 value;
  int length;
  int64_t next_hop;
};

struct WriteLog {
  std::vector<uint32_t> indices;
  std::vector<uint32_t> values;
  std::vector<uint64_t> barriers;  // every write before position p is visible before p
};

// The rows of 64 words (a Poptrie node's host ply, or 64 root slots) whose words a Trie
// changed while it marked into this (Trie::set_row_marks), one bit each: the Poptrie
// updater rescans only those rows.  Marking costs a bit per changed word (no write log).
struct RowMarks {
  std::vector<uint64_t> bits;     // bit r % 64 of word r / 64: row r was written
  std::vector<uint32_t> touched;  // the nonzero words of `bits`, to clear them
  uint32_t last = ~0u;            // the row marked last (the writes come in runs per row)
  [[gnu::always_inline]] void mark(uint32_t index) {
    const uint32_t row = index >> 6;
    if (row == last) return;
    last = row;
    uint64_t& word = bits[row >> 6];
    if (word == 0) touched.push_back(row >> 6);
    word |= uint64_t{1} << (row & 63);
  }
  bool marked(uint32_t index) const {
    const uint32_t row = index >> 6;
    return bits[row >> 6] >> (row & 63) & 1;
  }
  void clear() {
    for (const uint32_t w : touched) bits[w] = 0;
    touched.clear();
    last = ~0u;
  }
};

// The work of the updates since the last take_counters(): what an XScale running this
// updater would do (runtime/xscale_update.py costs it with sourced XScale parameters).
struct TrieCounters {
  uint64_t updates = 0;          // adds, replaces and deletes (each one route-map probe)
  uint64_t levels_walked = 0;    // path steps from the root down to the prefix's level
  uint64_t map_probes = 0;       // route-map probes beyond the update's own (the covering route)
  uint64_t slots_scanned = 0;    // slot depths compared: painting, covering, ply minimums, collapse
  uint64_t words_written = 0;    // trie words changed (each with its depth byte)
  uint64_t plies_allocated = 0;
  uint64_t plies_retired = 0;
};

// A traced read: a trie word's index, or with this bit set the index of the host word
// (4 bytes) that holds the slot's depth byte (the cache model's host address space).
inline constexpr uint64_t kTraceDepthWord = uint64_t{1} << 63;

struct TrieStats {
  size_t routes;
  size_t words_used;
  size_t plies_live;
  size_t plies_retired;
  size_t plies_free;
  size_t words_high_water;
};

// The route map: prefix -> next hop, open addressing with linear probing in one flat array
// (a lookup is about one cache miss; deletes shift entries back, so there are no
// tombstones).  Keys are left-aligned 128-bit values as two 64-bit halves.
class RouteMap {
 public:
  static constexpr size_t kNone = ~size_t{0};
  struct Entry {
    uint64_t hi = 0, lo = 0;
    int16_t length = -1;  // -1: empty
    uint16_t next_hop = 0;
  };

  RouteMap() { clear(); }
  size_t size() const { return size_; }
  size_t find(u128 key, int length) const;
  // Start loading a key's home slot while the trie walk runs (both are cache misses).
  void prefetch(u128 key, int length) const {
    __builtin_prefetch(&entries_[home(static_cast<uint64_t>(key >> 64),
                                      static_cast<uint64_t>(key), length)]);
  }
  const Entry& entry(size_t slot) const { return entries_[slot]; }
  bool insert_or_assign(u128 key, int length, uint16_t next_hop);  // true: inserted
  void erase(size_t slot);
  void clear() {
    entries_.assign(16, Entry{});
    mask_ = 15;
    size_ = 0;
  }
  void reserve(size_t n);
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const Entry& e : entries_)
      if (e.length >= 0) visit((u128{e.hi} << 64) | e.lo, int{e.length}, e.next_hop);
  }

 private:
  size_t home(uint64_t hi, uint64_t lo, int length) const;
  void rehash(size_t capacity);

  // (huge pages: a probe is a random read in a table of many MB, huge_pages.hpp)
  std::vector<Entry, HugeAllocator<Entry>> entries_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// What an updater counts and traces for the XScale cost model (runtime/xscale_update.py),
// the same calls for the trie and the Poptrie image: take_counters() returns the work since
// the last take and zeroes it; set_trace(on) starts (or stops) recording the words read,
// which take_trace() returns.  (Mutable: the trie counts its reads in const helpers.)
template <class Counters>
class WorkRecord {
 public:
  Counters take_counters() { return std::exchange(counters_, Counters{}); }
  void set_trace(bool on) {
    tracing_ = on;
    trace_.clear();
  }
  std::vector<uint64_t> take_trace() { return std::exchange(trace_, {}); }

 protected:
  mutable Counters counters_{};
  bool tracing_ = false;
  mutable std::vector<uint64_t> trace_;
};

class Trie : public WorkRecord<TrieCounters> {
 public:
  Trie(int key_bits, int root_bits, int ply_bits, uint32_t* words, size_t size, bool log,
       std::shared_ptr<Sequence> sequence);

  // Single updates; each is one sequence number.  Throw TrieError (and change nothing) on
  // a bad prefix or next hop, a missing route, or a full memory.
  void add(u128 value, int length, int64_t next_hop);
  void remove(u128 value, int length);
  // The same, and route(), for a prefix and next hop the caller has already checked (what
  // check_prefix and add's next-hop check require holds): the Poptrie updater's calls,
  // whose Python prefix was checked once on entry (module.cpp, PyPoptrie::prefix), so the
  // three checks per update are not repeated.
  void add_checked(u128 value, int length, uint32_t next_hop) {
    add_aligned(align(value), length, next_hop);
  }
  void remove_checked(u128 value, int length) { remove_aligned(align(value), length); }
  std::optional<uint32_t> route_checked(u128 value, int length) const;
  // Make the routes exactly `routes` by single updates (adds and replaces, shortest first,
  // then deletes, longest first), each safe for concurrent lookups; returns how many.
  // Everything is validated before the first write.
  size_t load(const std::vector<Route>& routes);
  void check(const std::vector<Route>& routes) const;  // load's checks, no change
  // Not safe for concurrent lookups: zero the table (the start of a bulk build).
  void clear();
  // Plies retired by updates numbered <= upto become reusable (the grace period is over).
  void reclaim(uint64_t upto);

  std::optional<uint32_t> lookup(u128 value) const;
  // The next hop of exactly this route, if present (throws TrieError on a bad prefix).
  std::optional<uint32_t> route(u128 value, int length) const;
  void check_prefix(u128 value, int length) const;  // throws TrieError
  // Start loading the route map slot of a coming update of this prefix (a batch looks
  // ahead: the probe is a cache miss on a large table).  Any value and length is safe.
  void prefetch_route(u128 value, int length) const { routes_.prefetch(align(value), length); }
  // Start loading the route map slots a delete of this prefix may probe for its covering
  // route (each length below it, down to its level's first bit, that holds routes).
  void prefetch_cover(u128 value, int length) const;
  // Start loading the host-only bytes an update reads for the ply at word offset `ply`:
  // its 64 depth bytes and its subtree minimum (hints: any offset is safe).
  void prefetch_ply(uint32_t ply) const {
    if (ply >= size_) return;
    const uint8_t* depths = depth_.get() + ply;
    __builtin_prefetch(depths);
    __builtin_prefetch(depths + ply_words_ - 1);
    if (ply >= root_words_) __builtin_prefetch(&ply_min_[(ply - root_words_) >> ply_bits_]);
  }
  // Start loading the depth byte of slot `slot` (a root slot: the first an update of a
  // prefix at most the root's bits long compares; a hint, any offset is safe).
  void prefetch_depth(uint32_t slot) const {
    if (slot < size_) __builtin_prefetch(depth_.get() + slot);
  }
  std::string show(u128 value, int length) const;   // "10.0.0.0/8", "2001:db8::/32"

  TrieStats stats() const;
  size_t route_count() const { return routes_.size(); }
  int max_length() const;  // longest prefix present, -1 if none
  void for_each_route(const std::function<void(u128, int, uint32_t)>& visit) const;
  std::vector<std::pair<uint32_t, uint64_t>> retired() const {
    return {retired_.begin(), retired_.end()};
  }
  bool logging() const { return logging_; }
  // Mark the rows of every changed word into `marks` (sized for these words), or stop (null).
  void set_row_marks(RowMarks* marks) { marks_ = marks; }
  // The Poptrie updater logs the host trie's writes of each update (the rows that changed).
  void set_logging(bool on) { logging_ = on; }
  // take_log() into `out`, whose cleared buffers the trie keeps (no allocation per update).
  void swap_log(WriteLog& out) {
    out.indices.clear();
    out.values.clear();
    out.barriers.clear();
    std::swap(out, log_);
  }
  WriteLog take_log();
  // The words changed since the last take_counters() (the PoptrieImage's host trie: its
  // updates' painted words, counted with or without the write log).
  uint64_t words_written() const { return counters_.words_written; }
  // (take_counters, set_trace, take_trace: WorkRecord; the trace holds every trie word and
  // depth byte the updates read.)
  uint64_t sequence() const { return sequence_->value; }
  int key_bits() const { return key_bits_; }
  const uint32_t* words() const { return words_; }
  // The smallest depth in the subtree of the ply at word offset `ply` (ply_min_: 1 + the
  // length of the shortest route behind any of its slots).  An update of a prefix of length
  // l writes only into plies whose subtree holds a depth <= l + 1 afterwards (painting sets
  // a ply it enters to the painted depth, a delete's to the cover's, which is shorter), so
  // a ply whose minimum exceeds l + 1 is as it was: the Poptrie updater skips its node.
  // `scanned` is set when the minimum was unknown and the ply's depths were scanned.
  uint8_t subtree_min(uint32_t ply, bool& scanned) const {
    const uint8_t low = ply_min_[(ply - root_words_) >> ply_bits_];
    scanned = low == kUnknownMin;
    if (!scanned) return low;
    return min_depth(depth_.get() + ply, ply_words_);
  }
  // The smallest of `count` depth bytes (a ply's: 64 or 256), 16 per SSE2 step.
  static uint8_t min_depth(const uint8_t* depths, uint32_t count) {
#if defined(__SSE2__)
    if (count % 16 == 0 && count > 0) {
      __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(depths));
      for (uint32_t i = 16; i < count; i += 16)
        low = _mm_min_epu8(low, _mm_loadu_si128(reinterpret_cast<const __m128i*>(depths + i)));
      low = _mm_min_epu8(low, _mm_srli_si128(low, 8));
      low = _mm_min_epu8(low, _mm_srli_si128(low, 4));
      low = _mm_min_epu8(low, _mm_srli_si128(low, 2));
      low = _mm_min_epu8(low, _mm_srli_si128(low, 1));
      return static_cast<uint8_t>(_mm_cvtsi128_si32(low));
    }
#endif
    return *std::min_element(depths, depths + count);
  }

 private:
  u128 align(u128 value) const { return value << (128 - key_bits_); }
  uint32_t chunk(u128 key, int level) const;
  int level_of(int length) const;  // the level whose stride holds the prefix's last bit
  size_t available_plies() const;
  uint32_t alloc_ply();

  void add_aligned(u128 key, int length, uint32_t next_hop);
  void remove_aligned(u128 key, int length);
  std::pair<uint32_t, uint8_t> covering(u128 key, int length, int level, uint32_t base,
                                        uint32_t first, uint32_t span,
                                        uint8_t parent_depth) const;
  std::pair<uint32_t, uint8_t> covering_by_probes(u128 key, int longest) const;
  std::pair<uint32_t, uint8_t> route_leaf(u128 key, int length) const;
  void grow(int level, uint32_t slot, u128 key, int length, uint32_t leaf, uint8_t depth);
  void paint_add(uint32_t first, uint32_t count, uint32_t leaf, uint8_t depth);
  void paint_delete(uint32_t first, uint32_t count, uint32_t leaf, uint8_t depth,
                    uint8_t deleted_depth);
  // The smallest depth in the ply at word offset `ply` (scanned if marked unknown).
  uint8_t ply_min(uint32_t ply);
  void set_ply_min(uint32_t ply, uint8_t low) {
    ply_min_[(ply - root_words_) >> ply_bits_] = low;
  }
  void forget_min(uint32_t slot);  // the ply holding `slot` changed: min unknown
  bool collapse(uint32_t slot, uint32_t ply, int first_bit, uint64_t number);

  // Trace the reads (tracing on).  The loops over slots count their compares once, in
  // bulk: a per-slot increment of a member costs a load and a store each (the depth bytes
  // may alias it), a quarter of a wide update's time.
  void trace_depth(uint32_t slot) const {
    const uint64_t word = kTraceDepthWord | (slot >> 2);
    if (trace_.empty() || trace_.back() != word) trace_.push_back(word);
  }
  void trace_depths(uint32_t first, uint32_t count) const {
    if (tracing_)
      for (uint32_t i = first; i < first + count; ++i) trace_depth(i);
  }
  void read_depth(uint32_t slot) const {  // one compare outside the loops
    ++counters_.slots_scanned;
    if (tracing_) trace_depth(slot);
  }
  void read_word(uint32_t index) const {
    if (tracing_) trace_.push_back(index);
  }

  // The only place the words change (besides clear): inline, as painting a short prefix
  // calls it for thousands of slots.
  [[gnu::always_inline]] void write(uint32_t index, uint32_t value) {
    if (words_[index] == value) return;  // an unchanged word costs no chip write
    ++counters_.words_written;
    // One aligned 32-bit store: a concurrent native lookup sees the old or the new word.
    std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_relaxed);
    if (marks_) marks_->mark(index);
    if (logging_) log_write(index, value);
  }
  [[gnu::noinline]] void log_write(uint32_t index, uint32_t value) {
    log_.indices.push_back(index);
    log_.values.push_back(value);
  }
  // write() of a word known to change, its count left to the caller (the paint loops
  // count their writes in a local: a member's increment after each depth byte store is a
  // load and a store, as the bytes may alias it).
  [[gnu::always_inline]] void store(uint32_t index, uint32_t value) {
    std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_relaxed);
    if (marks_) marks_->mark(index);
    if (logging_) log_write(index, value);
  }
  // Call paint(i), in order, for every slot i in [first, first + count) whose depth is at
  // most `limit` (the painting loops' test), tracing every depth read when tracing.  The
  // depths are compared 16 per SSE2 step: a delete or add of a short prefix skips the
  // thousands of slots that longer routes own.  paint(i) may change depth i and the
  // depths of child plies (other slots), not the other slots of the range.
  // `block(i)`, when all 16 slots from i pass the test, may paint the 16 at once and
  // return true (else they are painted one by one); never called when tracing.
  template <class Paint, class Block>
  [[gnu::always_inline]] void paint_slots(uint32_t first, uint32_t count, uint8_t limit,
                                          Paint&& paint, Block&& block) {
    const uint8_t* const depths = depth_.get();
    const uint32_t end = first + count;
    uint32_t i = first;
    if (tracing_) {
      for (; i < end; ++i) {
        trace_depth(i);
        if (depths[i] <= limit) paint(i);
      }
      return;
    }
#if defined(__SSE2__)
    const __m128i most = _mm_set1_epi8(static_cast<char>(limit));
    for (; i + 16 <= end; i += 16) {
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(depths + i));
      // d <= limit (unsigned): min(d, limit) == d
      auto mask =
          static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, most), d)));
      if (mask == 0xFFFF && block(i, d)) continue;
      for (; mask; mask &= mask - 1) paint(i + static_cast<uint32_t>(__builtin_ctz(mask)));
    }
#endif
    for (; i < end; ++i)
      if (depths[i] <= limit) paint(i);
  }
#if defined(__SSE2__)
  // Whether none of the 16 words from `i` is a child pointer (the sign bit).
  bool no_child16(uint32_t i) const {
    const auto* w = reinterpret_cast<const __m128i*>(words_ + i);
    const __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(w), _mm_loadu_si128(w + 1)),
                                     _mm_or_si128(_mm_loadu_si128(w + 2), _mm_loadu_si128(w + 3)));
    return _mm_movemask_ps(_mm_castsi128_ps(any)) == 0;
  }
  // 16 leaf slots from `i` take `leaf` (each word that changes: store(), counted in
  // `written`) and depth `depth`: what paint(i) does to each, in the same order of writes.
  [[gnu::always_inline]] void paint16(uint32_t i, uint32_t leaf, uint8_t depth,
                                      uint64_t& written) {
    for (uint32_t k = i; k < i + 16; ++k)
      if (words_[k] != leaf) {
        ++written;
        store(k, leaf);
      }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(depth_.get() + i),
                     _mm_set1_epi8(static_cast<char>(depth)));
  }
#endif
  void publish(uint32_t index, uint32_t value);  // a barrier, then the linking write
  void barrier();

  int key_bits_;
  int root_bits_;
  int ply_bits_;
  int levels_;
  uint32_t root_words_;
  uint32_t ply_words_;
  std::array<int, kMaxLevels> end_bit_{};  // last key bit (exclusive) each level indexes
  uint32_t* words_;
  size_t size_;
  HugeArray<uint8_t> depth_;  // zero-filled lazily, on huge pages (huge_pages.hpp)
  // Per ply, the smallest depth of its slots.  A child slot's depth never exceeds a depth
  // in its ply (the route behind it covers the whole ply), so this is the smallest depth
  // of the whole subtree: painting depth d skips a ply whose min exceeds d, which keeps a
  // short prefix's update out of the plies that longer routes own (the worst updates).
  // Kept exact by every paint; a partial change marks it unknown (kUnknownMin), and the
  // next paint that reaches the ply scans it (bulk loads thus never scan).
  static constexpr uint8_t kUnknownMin = 0xFF;
  std::vector<uint8_t> ply_min_;
  RouteMap routes_;
  std::array<uint32_t, 129> length_count_{};
  uint32_t next_free_;
  std::vector<uint32_t> free_;
  std::deque<std::pair<uint32_t, uint64_t>> retired_;  // (ply, update number), in order
  bool logging_;
  RowMarks* marks_ = nullptr;
  WriteLog log_;
  std::shared_ptr<Sequence> sequence_;
};

}  // namespace npkit::trie
