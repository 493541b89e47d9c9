// The trie updater: see trie.hpp and docs/lpm.md ("Single-route updates", "Safety").
#include "trie.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace npkit::trie {
namespace {

std::string hex(u128 v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[static_cast<unsigned>(v & 15)]);
    v >>= 4;
  } while (v != 0);
  return "0x" + out;
}

u128 top_bits_mask(int length) {
  return length == 0 ? u128{0} : ~u128{0} << (128 - length);
}

}  // namespace

// ---- the route map ----

size_t RouteMap::home(uint64_t hi, uint64_t lo, int length) const {
  uint64_t h = hi * 0x9E3779B97F4A7C15ULL;
  h ^= lo + 0xC2B2AE3D27D4EB4FULL + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(length) * 0x165667B19E3779F9ULL;
  h ^= h >> 33;  // splitmix-style finish: the low bits pick the slot
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  return static_cast<size_t>(h) & mask_;
}

size_t RouteMap::find(u128 key, int length) const {
  const auto hi = static_cast<uint64_t>(key >> 64), lo = static_cast<uint64_t>(key);
  for (size_t i = home(hi, lo, length);; i = (i + 1) & mask_) {
    const Entry& e = entries_[i];
    if (e.length < 0) return kNone;
    if (e.length == length && e.lo == lo && e.hi == hi) return i;
  }
}

bool RouteMap::insert_or_assign(u128 key, int length, uint16_t next_hop) {
  if (2 * (size_ + 1) > entries_.size()) rehash(2 * entries_.size());  // load <= 1/2
  const auto hi = static_cast<uint64_t>(key >> 64), lo = static_cast<uint64_t>(key);
  for (size_t i = home(hi, lo, length);; i = (i + 1) & mask_) {
    Entry& e = entries_[i];
    if (e.length < 0) {
      e = Entry{hi, lo, static_cast<int16_t>(length), next_hop};
      ++size_;
      return true;
    }
    if (e.length == length && e.lo == lo && e.hi == hi) {
      e.next_hop = next_hop;
      return false;
    }
  }
}

void RouteMap::erase(size_t slot) {
  // Backward shift: move later entries of the probe run into the hole when the hole lies
  // between their home and their slot, so every lookup still finds them.
  size_t hole = slot;
  for (size_t j = (hole + 1) & mask_; entries_[j].length >= 0; j = (j + 1) & mask_) {
    const Entry& e = entries_[j];
    const size_t want = home(e.hi, e.lo, e.length);
    const bool movable = hole <= j ? (want <= hole || want > j) : (want <= hole && want > j);
    if (movable) {
      entries_[hole] = e;
      hole = j;
    }
  }
  entries_[hole] = Entry{};
  --size_;
}

void RouteMap::reserve(size_t n) {
  size_t capacity = entries_.size();
  while (capacity < 2 * n) capacity *= 2;
  if (capacity != entries_.size()) rehash(capacity);
}

void RouteMap::rehash(size_t capacity) {
  std::vector<Entry, HugeAllocator<Entry>> old(capacity);
  old.swap(entries_);
  mask_ = capacity - 1;
  for (const Entry& e : old) {
    if (e.length < 0) continue;
    size_t i = home(e.hi, e.lo, e.length);
    while (entries_[i].length >= 0) i = (i + 1) & mask_;
    entries_[i] = e;
  }
}

// ---- the trie ----

Trie::Trie(int key_bits, int root_bits, int ply_bits, uint32_t* words, size_t size, bool log,
           std::shared_ptr<Sequence> sequence)
    : key_bits_(key_bits),
      root_bits_(root_bits),
      ply_bits_(ply_bits),
      words_(words),
      size_(size),
      logging_(log),
      sequence_(std::move(sequence)) {
  if (key_bits < 1 || key_bits > 128 || root_bits < 1 || root_bits > 24 || ply_bits < 1 ||
      ply_bits > 16 || root_bits > key_bits || (key_bits - root_bits) % ply_bits != 0)
    throw TrieError("bad trie shape: " + std::to_string(key_bits) + "-bit keys, root " +
                    std::to_string(root_bits) + " bits, plies " + std::to_string(ply_bits));
  levels_ = 1 + (key_bits - root_bits) / ply_bits;
  if (levels_ > kMaxLevels) throw TrieError("bad trie shape: too many levels");
  root_words_ = 1u << root_bits;
  ply_words_ = 1u << ply_bits;
  // Keys are left-aligned in 128 bits: level l indexes bits [end - stride, end).
  for (int level = 0; level < levels_; ++level)
    end_bit_[level] = root_bits + level * ply_bits;
  if (size < root_words_)
    throw TrieError("the trie needs a uint32 memory of at least " +
                    std::to_string(root_words_) + " words");
  if (size > (size_t{1} << 31))
    throw TrieError("a trie memory holds at most 2^31 words (31-bit child pointers)");
  if (!sequence_) sequence_ = std::make_shared<Sequence>();
  // A large trie memory's depth bytes are zero-filled lazily, like the words (huge_acquire).
  depth_ = huge_zeroed<uint8_t>(size);
  ply_min_.assign((size - root_words_) / ply_words_, 0);
  next_free_ = root_words_;
}

uint32_t Trie::chunk(u128 key, int level) const {
  const int stride = level == 0 ? root_bits_ : ply_bits_;
  return static_cast<uint32_t>(key >> (128 - end_bit_[level])) & ((1u << stride) - 1);
}

int Trie::level_of(int length) const {
  if (length <= root_bits_) return 0;
  return (length - root_bits_ + ply_bits_ - 1) / ply_bits_;
}

size_t Trie::available_plies() const {
  return free_.size() + (size_ - next_free_) / ply_words_;
}

uint32_t Trie::alloc_ply() {
  if (!free_.empty()) {
    const uint32_t ply = free_.back();
    free_.pop_back();
    return ply;
  }
  const uint32_t ply = next_free_;
  next_free_ += ply_words_;
  return ply;
}

// ---- word writes: the only place the words change (besides clear) ----

void Trie::barrier() {
  if (!logging_) return;
  const uint64_t position = log_.indices.size();
  if (log_.barriers.empty() || log_.barriers.back() != position)
    log_.barriers.push_back(position);
}

void Trie::publish(uint32_t index, uint32_t value) {
  barrier();
  ++counters_.words_written;
  std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_release);
  if (marks_) marks_->mark(index);
  if (logging_) {
    log_.indices.push_back(index);
    log_.values.push_back(value);
  }
}

WriteLog Trie::take_log() {
  WriteLog out;
  std::swap(out, log_);
  return out;
}

// ---- checks and names ----

void Trie::check_prefix(u128 value, int length) const {
  if (length < 0 || length > key_bits_ || (key_bits_ < 128 && value >> key_bits_ != 0))
    throw TrieError("bad prefix " + hex(value) + "/" + std::to_string(length) + " for " +
                    std::to_string(key_bits_) + "-bit keys");
  if (align(value) & ~top_bits_mask(length))
    throw TrieError(show(value, length) + " has host bits set");
}

static void check_next_hop(int64_t next_hop) {
  if (next_hop < 0 || next_hop > kNextHopMask)
    throw TrieError("next hop " + std::to_string(next_hop) + " out of range 0.." +
                    std::to_string(kNextHopMask));
}

std::string Trie::show(u128 value, int length) const {
  char text[INET6_ADDRSTRLEN] = {};
  if (key_bits_ == 32) {
    const uint32_t v = htonl(static_cast<uint32_t>(value));
    inet_ntop(AF_INET, &v, text, sizeof text);
  } else if (key_bits_ == 128) {
    unsigned char bytes[16];
    for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(value >> (120 - 8 * i));
    inet_ntop(AF_INET6, bytes, text, sizeof text);
  } else {
    return hex(value) + "/" + std::to_string(length);
  }
  return std::string(text) + "/" + std::to_string(length);
}

// ---- single updates ----

void Trie::add(u128 value, int length, int64_t next_hop) {
  check_prefix(value, length);
  check_next_hop(next_hop);
  add_aligned(align(value), length, static_cast<uint32_t>(next_hop));
}

std::optional<uint32_t> Trie::route(u128 value, int length) const {
  check_prefix(value, length);
  return route_checked(value, length);
}

std::optional<uint32_t> Trie::route_checked(u128 value, int length) const {
  const size_t found = routes_.find(align(value), length);
  if (found == RouteMap::kNone) return std::nullopt;
  return routes_.entry(found).next_hop;
}

void Trie::remove(u128 value, int length) {
  check_prefix(value, length);
  remove_aligned(align(value), length);
}

void Trie::add_aligned(u128 key, int length, uint32_t next_hop) {
  routes_.prefetch(key, length);
  const uint32_t leaf = kRoute | next_hop;
  const auto depth = static_cast<uint8_t>(length + 1);
  ++counters_.updates;
  uint32_t base = 0;
  for (int level = 0; level < levels_; ++level) {
    ++counters_.levels_walked;
    const uint32_t slot = base + chunk(key, level);
    const int end = end_bit_[level];
    if (length <= end) {
      paint_add(slot, 1u << (end - length), leaf, depth);
      forget_min(slot);
      break;
    }
    read_word(slot);
    const uint32_t word = words_[slot];
    if (word & kChild) {
      base = word & kPointerMask;
      continue;
    }
    grow(level, slot, key, length, leaf, depth);  // throws before any write if full
    break;
  }
  if (routes_.insert_or_assign(key, length, static_cast<uint16_t>(next_hop)))
    ++length_count_[length];
  ++sequence_->value;
}

// Write `leaf` over every slot in the range whose route is no longer than the new one,
// and into the child plies of the range.  Child slots keep their pointer but take the
// depth, so that a later collapse or delete knows what covers the whole ply.  A child ply
// whose every depth exceeds the new one belongs to longer routes: nothing there changes.
void Trie::paint_add(uint32_t first, uint32_t count, uint32_t leaf, uint8_t depth) {
  uint8_t* const depths = depth_.get();
  uint32_t* const words = words_;
  const bool tracing = tracing_;
  counters_.slots_scanned += count;
  uint64_t written = 0;  // counted here, added once (see paint_slots)
  auto paint = [&](uint32_t i) __attribute__((always_inline)) {
    if (tracing) trace_.push_back(i);
    const uint32_t word = words[i];
    if (word & kChild) {
      const uint32_t ply = word & kPointerMask;
      if (ply_min(ply) <= depth) {
        paint_add(ply, ply_words_, leaf, depth);
        set_ply_min(ply, depth);  // its slots <= depth now hold it, the rest exceed it
      }
    } else if (word != leaf) {
      ++written;
      store(i, leaf);
    }
    depths[i] = depth;
  };
  // 16 leaf slots at once (no child among them): the inner plies of a short prefix.
#if defined(__SSE2__)
  auto block = [&](uint32_t i, __m128i) __attribute__((always_inline)) {
    if (!no_child16(i)) return false;
    paint16(i, leaf, depth, written);
    return true;
  };
#else
  auto block = [](uint32_t, int) { return false; };
#endif
  paint_slots(first, count, depth, paint, block);  // the slots of depth <= the new one
  counters_.words_written += written;
}

uint8_t Trie::ply_min(uint32_t ply) {
  uint8_t& low = ply_min_[(ply - root_words_) >> ply_bits_];
  if (low == kUnknownMin) {
    counters_.slots_scanned += ply_words_;
    trace_depths(ply, ply_words_);
    low = min_depth(depth_.get() + ply, ply_words_);
  }
  return low;
}

void Trie::forget_min(uint32_t slot) {
  if (slot < root_words_) return;  // the root has no summary: every walk starts there
  ply_min_[(slot - root_words_) >> ply_bits_] = kUnknownMin;
}

// The prefix ends below the leaf at `slot`: new plies down to its level, each written
// completely (deepest first) with the inherited leaf, the next ply's pointer or the new
// route; then one word links the chain.
void Trie::grow(int level, uint32_t slot, u128 key, int length, uint32_t leaf, uint8_t depth) {
  const int last = level_of(length);
  const int count = last - level;
  if (available_plies() < static_cast<size_t>(count))
    throw TrieError("the trie memory is full (" + std::to_string(size_) +
                    " words): declare a larger array");
  std::array<uint32_t, kMaxLevels> plies{};
  for (int i = 0; i < count; ++i) plies[i] = alloc_ply();
  counters_.plies_allocated += static_cast<uint64_t>(count);
  const uint32_t inherited = words_[slot];
  const uint8_t inherited_depth = depth_.get()[slot];
  uint8_t* depths = depth_.get();
  for (int i = count - 1; i >= 0; --i) {
    const int ply_level = level + 1 + i;
    const uint32_t ply = plies[i];
    const uint32_t sub = chunk(key, ply_level);
    uint32_t first = sub, span = 1, value = kChild | plies[i + 1];
    uint8_t value_depth = inherited_depth;
    if (i == count - 1) {
      span = 1u << (end_bit_[ply_level] - length);
      value = leaf;
      value_depth = depth;
    }
    // The words (in order, counted as write() does), then the depth bytes in three runs:
    // a byte store may alias a member, so one loop doing both reloaded and stored the
    // write count per slot (write()): 6 % of an IPv6 /0-/31 update's instructions.
    uint32_t* const words = words_;
    uint64_t written = 0;
    for (uint32_t j = 0; j < ply_words_; ++j) {
      const uint32_t want = j - first < span ? value : inherited;
      if (words[ply + j] != want) {
        ++written;
        store(ply + j, want);
      }
    }
    counters_.words_written += written;
    std::memset(depths + ply, inherited_depth, first);
    std::memset(depths + ply + first, value_depth, span);
    std::memset(depths + ply + first + span, inherited_depth, ply_words_ - first - span);
    // The inherited depth is the smaller, unless the route fills the ply.
    set_ply_min(ply, span == ply_words_ ? value_depth : inherited_depth);
  }
  publish(slot, kChild | plies[0]);
}

void Trie::remove_aligned(u128 key, int length) {
  const size_t found = routes_.find(key, length);
  if (found == RouteMap::kNone) {
    const int shift = 128 - key_bits_;
    throw TrieError("no route " + show(key >> shift, length) + " to delete");
  }
  const auto deleted_depth = static_cast<uint8_t>(length + 1);
  const uint64_t number = sequence_->value + 1;
  struct Step {
    uint32_t slot, ply;
    int first_bit;
  };
  std::array<Step, kMaxLevels> path;  // (only the first `steps` are read: not zeroed)
  int steps = 0;
  uint32_t base = 0;
  ++counters_.updates;
  for (int level = 0; level < levels_; ++level) {
    ++counters_.levels_walked;
    const uint32_t slot = base + chunk(key, level);
    const int end = end_bit_[level];
    if (length <= end) {
      const uint32_t span = 1u << (end - length);
      if (steps > 0) read_depth(path[steps - 1].slot);
      const uint8_t parent_depth = steps > 0 ? depth_.get()[path[steps - 1].slot] : 0;
      const auto [leaf, depth] = covering(key, length, level, base, slot, span, parent_depth);
      paint_delete(slot, span, leaf, depth, deleted_depth);
      forget_min(slot);
      break;
    }
    read_word(slot);
    const uint32_t word = words_[slot];
    if (!(word & kChild)) break;  // no ply below: nothing of the route is stored here
    base = word & kPointerMask;
    path[steps++] = Step{slot, base, end};
  }
  // Bottom-up: a ply still holding a child pointer cannot collapse, nor can its parents.
  while (steps > 0) {
    const Step& step = path[--steps];
    if (!collapse(step.slot, step.ply, step.first_bit, number)) break;
  }
  routes_.erase(found);
  --length_count_[length];
  ++sequence_->value;
}

// The leaf and depth of the longest route strictly shorter than `length` that covers
// `key` ((0, 0): none), for a route that ends in the level at `base` and covers `span`
// slots from `first`.  The slot depths do most of the work: going out from the route's
// range in aligned blocks that double, if a slot of the new half has depth d <= l (the
// block's prefix length), the route behind it (length d - 1) covers the whole block and
// is the answer; otherwise only a route of exactly length l can be, one map probe.
// Past the level, the parent slot's depth names the route covering the whole ply.
std::pair<uint32_t, uint8_t> Trie::covering(u128 key, int length, int level, uint32_t base,
                                            uint32_t first, uint32_t span,
                                            uint8_t parent_depth) const {
  constexpr uint32_t kScanLimit = 256;  // wider root blocks: probe the map instead
  const uint8_t* depths = depth_.get();
  const int start = level == 0 ? 0 : end_bit_[level - 1];
  uint32_t offset = first - base, size = span;
  for (int l = length - 1; l >= start; --l) {
    if (size > kScanLimit) return covering_by_probes(key, l);
    const uint32_t block = offset & ~(2 * size - 1);
    const uint32_t sibling = base + (offset == block ? block + size : block);
    uint32_t at = sibling;
    counters_.slots_scanned += size;
    trace_depths(sibling, size);
    for (uint32_t j = sibling + 1; j < sibling + size; ++j)
      if (depths[j] < depths[at]) at = j;
    if (depths[at] <= l) {
      if (depths[at] == 0) return {0, 0};
      read_word(at);
      const uint32_t word = words_[at];
      if (!(word & kChild)) return {word, depths[at]};
      return route_leaf(key, depths[at] - 1);
    }
    if (length_count_[l] != 0) {
      ++counters_.map_probes;
      const size_t hit = routes_.find(key & top_bits_mask(l), l);
      if (hit != RouteMap::kNone)
        return {kRoute | routes_.entry(hit).next_hop, static_cast<uint8_t>(l + 1)};
    }
    offset = block;
    size *= 2;
  }
  if (parent_depth == 0) return {0, 0};
  return route_leaf(key, parent_depth - 1);
}

void Trie::prefetch_cover(u128 value, int length) const {
  if (length < 1 || length > key_bits_) return;
  const u128 key = align(value);
  const int level = level_of(length);
  const int start = level == 0 ? std::max(0, length - 8) : end_bit_[level - 1];
  for (int l = length - 1; l >= start; --l)
    if (length_count_[l] != 0) routes_.prefetch(key & top_bits_mask(l), l);
}

std::pair<uint32_t, uint8_t> Trie::covering_by_probes(u128 key, int longest) const {
  for (int l = longest; l >= 0; --l) {
    if (length_count_[l] == 0) continue;
    ++counters_.map_probes;
    const size_t hit = routes_.find(key & top_bits_mask(l), l);
    if (hit != RouteMap::kNone)
      return {kRoute | routes_.entry(hit).next_hop, static_cast<uint8_t>(l + 1)};
  }
  return {0, 0};
}

// The leaf of the route of `length` that covers `key`, which the depths say exists.
std::pair<uint32_t, uint8_t> Trie::route_leaf(u128 key, int length) const {
  ++counters_.map_probes;
  const size_t hit = routes_.find(key & top_bits_mask(length), length);
  if (hit == RouteMap::kNone)
    throw TrieError("corrupt trie: a slot's depth names a route that does not exist");
  return {kRoute | routes_.entry(hit).next_hop, static_cast<uint8_t>(length + 1)};
}

// Write the covering leaf into exactly the slots whose depth says they came from the
// deleted route (none in a child ply whose every depth exceeds the deleted one).
void Trie::paint_delete(uint32_t first, uint32_t count, uint32_t leaf, uint8_t depth,
                        uint8_t deleted_depth) {
  uint8_t* const depths = depth_.get();
  uint32_t* const words = words_;
  const bool tracing = tracing_;
  counters_.slots_scanned += count;
  uint64_t written = 0;
  auto paint = [&](uint32_t i) __attribute__((always_inline)) {
    if (tracing) trace_.push_back(i);
    const uint32_t word = words[i];
    if (word & kChild) {
      const uint32_t ply = word & kPointerMask;
      // Every slot under the deleted prefix is at least as deep as its cover (prefixes
      // nest), and those that were not deeper were the cover's or now are: the new min.
      if (ply_min(ply) <= deleted_depth) {
        paint_delete(ply, ply_words_, leaf, depth, deleted_depth);
        set_ply_min(ply, depth);
      }
    } else if (depths[i] == deleted_depth && word != leaf) {
      ++written;
      store(i, leaf);
    }
    if (depths[i] == deleted_depth) depths[i] = depth;
  };
  // 16 leaf slots at once, all the deleted route's (no child, every depth the deleted one).
#if defined(__SSE2__)
  const __m128i deleted = _mm_set1_epi8(static_cast<char>(deleted_depth));
  auto block = [&](uint32_t i, __m128i d) __attribute__((always_inline)) {
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(d, deleted)) != 0xFFFF || !no_child16(i))
      return false;
    paint16(i, leaf, depth, written);
    return true;
  };
#else
  auto block = [](uint32_t, int) { return false; };
#endif
  paint_slots(first, count, deleted_depth, paint, block);  // (a longer route's slots: skipped)
  counters_.words_written += written;
}

// Replace a ply by its leaf when one route no longer than the ply's parent slot covers all
// of it (a ply that several longer routes fill with one next hop stays: later updates need
// its depths).  The unlinked ply is retired, tagged with this update's number.
bool Trie::collapse(uint32_t slot, uint32_t ply, int first_bit, uint64_t number) {
  read_word(ply);
  read_depth(ply);
  const uint32_t word = words_[ply];
  const uint8_t* depths = depth_.get();
  const uint8_t depth = depths[ply];
  if ((word & kChild) || static_cast<int>(depth) - 1 > first_bit) return false;
  uint32_t j = 1;
  while (j < ply_words_ && words_[ply + j] == word && depths[ply + j] == depth) ++j;
  const uint32_t compared = std::min(j + 1, ply_words_) - 1;  // slots 1.. up to a mismatch
  counters_.slots_scanned += compared;
  if (tracing_)
    for (uint32_t k = 1; k <= compared; ++k) {
      read_word(ply + k);
      trace_depth(ply + k);
    }
  if (j < ply_words_) return false;
  depth_.get()[slot] = depth;
  write(slot, word);
  forget_min(slot);
  retired_.emplace_back(ply, number);
  ++counters_.plies_retired;
  return true;
}

void Trie::reclaim(uint64_t upto) {
  bool freed = false;
  while (!retired_.empty() && retired_.front().second <= upto) {
    free_.push_back(retired_.front().first);
    retired_.pop_front();
    freed = true;
  }
  // Reusing a ply must not overtake the write that unlinked it.
  if (freed) barrier();
}

// ---- whole table ----

void Trie::clear() {
  if (logging_) {
    for (uint32_t i = 0; i < next_free_; ++i) write(i, 0);
  } else {
    std::memset(words_, 0, size_t{next_free_} * sizeof(uint32_t));
  }
  std::memset(depth_.get(), 0, next_free_);
  std::fill(ply_min_.begin(), ply_min_.end(), uint8_t{0});
  routes_.clear();
  length_count_.fill(0);
  next_free_ = root_words_;
  free_.clear();
  retired_.clear();
}

void Trie::check(const std::vector<Route>& routes) const {
  for (const Route& r : routes) {
    check_prefix(r.value, r.length);
    check_next_hop(r.next_hop);
  }
}

size_t Trie::load(const std::vector<Route>& routes) {
  check(routes);
  // Counting sort by length, stable: adds and replaces shortest first, so that a longer
  // route lands in the slots its cover already painted; a prefix listed twice: last wins.
  std::array<size_t, 130> first_of{};
  for (const Route& r : routes) ++first_of[r.length + 1];
  for (int l = 1; l < 130; ++l) first_of[l] += first_of[l - 1];
  std::vector<uint32_t> order(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) order[first_of[routes[i].length]++] = i;

  size_t updates = 0;
  if (routes_.size() == 0) {  // a bulk load: every route is an add
    routes_.reserve(routes.size());
    for (const uint32_t i : order) {
      add_aligned(align(routes[i].value), routes[i].length,
                  static_cast<uint32_t>(routes[i].next_hop));
      ++updates;
    }
    return updates;
  }
  RouteMap target;
  target.reserve(routes.size());
  for (const Route& r : routes)
    target.insert_or_assign(align(r.value), r.length, static_cast<uint16_t>(r.next_hop));
  std::vector<std::array<u128, 2>> deletes;  // (key, length), longest first
  routes_.for_each([&](u128 key, int length, uint16_t) {
    if (target.find(key, length) == RouteMap::kNone) deletes.push_back({key, u128(length)});
  });
  for (const uint32_t i : order) {
    const Route& r = routes[i];
    const u128 key = align(r.value);
    const size_t want = target.find(key, r.length);
    const size_t have = routes_.find(key, r.length);
    const uint16_t next_hop = target.entry(want).next_hop;
    if (static_cast<int64_t>(next_hop) != r.next_hop) continue;  // a later duplicate wins
    if (have != RouteMap::kNone && routes_.entry(have).next_hop == next_hop) continue;
    add_aligned(key, r.length, next_hop);
    ++updates;
  }
  std::stable_sort(deletes.begin(), deletes.end(),
                   [](const auto& a, const auto& b) { return a[1] > b[1]; });
  for (const auto& [key, length] : deletes) {
    remove_aligned(key, static_cast<int>(length));
    ++updates;
  }
  return updates;
}

// ---- reading ----

std::optional<uint32_t> Trie::lookup(u128 value) const {
  const u128 key = align(value);
  uint32_t base = 0;
  for (int level = 0; level < levels_; ++level) {
    const uint32_t word = words_[base + chunk(key, level)];
    if (!(word & kChild)) {
      if (word & kRoute) return word & kNextHopMask;
      return std::nullopt;
    }
    base = word & kPointerMask;
  }
  throw TrieError("corrupt trie: a child pointer below the last level");
}

int Trie::max_length() const {
  for (int length = key_bits_; length >= 0; --length)
    if (length_count_[length] != 0) return length;
  return -1;
}

void Trie::for_each_route(const std::function<void(u128, int, uint32_t)>& visit) const {
  routes_.for_each([&](u128 key, int length, uint16_t next_hop) {
    visit(key >> (128 - key_bits_), length, next_hop);
  });
}

TrieStats Trie::stats() const {
  const size_t allocated = (next_free_ - root_words_) / ply_words_;
  const size_t live = allocated - free_.size() - retired_.size();
  return TrieStats{routes_.size(),      root_words_ + live * ply_words_, live,
                   retired_.size(),     free_.size(),                    next_free_};
}

}  // namespace npkit::trie
