// The Poptrie image updater (docs/lpm.md, "Poptrie"; runtime/poptrie.py): path-copying
// updates of a Poptrie in chip memory, from a host-side leaf-pushed trie with the same
// geometry (a Trie with a D-bit root and 6-bit plies, whose words it reads).
//
// Layout in one 32-bit word memory: [0, 2^D) direct entries (kChild | node offset, or a
// leaf word); a node is 8 words, per 32-bit half of its bitmaps (low half first): vector,
// base1 (children, 8 words each), leafvec, base0 (leaves), each base already counting the
// low half's bits -- so that each read of the chip's walker is one run of adjacent words
// (docs/lpm.md, "Poptrie").  New blocks are written into free memory, then (after a barrier)
// one word switches to them; the old blocks are retired with the update's number until
// reclaim() ends their grace period.  An update touches only what changes: a node whose
// words stay the same keeps its blocks (nothing is copied below it), a node whose bitmaps
// stay the same gets its changed leaves rewritten in place (one word each: a lookup reads
// one leaf, so it sees the old or the new one) and, if its children or leaf block moved,
// its base words too (one word per half and block: a lookup's step reads one of them, and
// the old and the new block are both complete); only a node whose bitmaps change is
// copied, with its sibling block, into a new block that its parent's base words (or the
// direct entry) switch to -- so path copying stops one level above the changed node.
//
// Every update also counts its work (UpdateCounters) and, when asked, traces the words it
// reads, for the XScale cost model (runtime/xscale_update.py).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>
#include <vector>

#include "trie.hpp"

namespace npkit::trie {

struct PoptrieStats {
  size_t live_words;
  size_t retired_words;
  size_t free_words;
  size_t next_free;
  uint64_t number;
};

// The work of the updates since the last take_counters(): what an XScale running this
// updater would do (docs/performance.md, "Route updates: the XScale cost from counted work").
struct UpdateCounters {
  uint64_t updates = 0;           // numbered updates of the image
  uint64_t entries = 0;           // direct entries refreshed
  uint64_t nodes_visited = 0;     // image nodes compared with the host trie, built or skipped
  uint64_t host_words_read = 0;   // host trie slots scanned (64 per node)
  uint64_t image_words_read = 0;  // shadow words read: old headers, old leaves, copies
  uint64_t words_written = 0;     // image words written (new blocks, in-place leaves, links)
  uint64_t blocks_allocated = 0;  // free-list or high-water allocations
  uint64_t blocks_retired = 0;    // blocks handed to the grace period
};

// A traced word: bit 63 set for a host trie word, clear for an image (shadow) word.
inline constexpr uint64_t kHostTrace = uint64_t{1} << 63;

class PoptrieImage : public WorkRecord<UpdateCounters> {
 public:
  static constexpr int kStride = 6;
  static constexpr uint32_t kNodeWords = 8;
  // Word offsets inside a node: each 32-bit half of the bitmaps sits next to the base of its
  // own half (the base of the low half's first child or leaf, and of the high half's, which
  // includes the low half's popcount).  So the chip's walker reads one half in one command:
  // [kVectorLo, kBase1Lo] (or the Hi pair) for a step to a child, [kLeafvecLo, kBase0Lo]
  // for a step to a leaf, or the half's 4 words at once; the low half first, so key bits v
  // find their half at node + ((v >> 3) & 4) (microblocks/lpm_poptrie.mbl).
  static constexpr uint32_t kVectorLo = 0, kBase1Lo = 1, kLeafvecLo = 2, kBase0Lo = 3,
                            kVectorHi = 4, kBase1Hi = 5, kLeafvecHi = 6, kBase0Hi = 7;
  // A node's 8 words from its fields (base1, base0: the first child / leaf, 0 if none).
  static void node_words(uint64_t vector, uint64_t leafvec, uint32_t base1, uint32_t base0,
                         uint32_t out[kNodeWords]) {
    const auto vlo = static_cast<uint32_t>(vector), llo = static_cast<uint32_t>(leafvec);
    out[kVectorHi] = static_cast<uint32_t>(vector >> 32);  // (in the order of the words)
    out[kBase1Hi] = base1 + kNodeWords * static_cast<uint32_t>(__builtin_popcount(vlo));
    out[kLeafvecHi] = static_cast<uint32_t>(leafvec >> 32);
    out[kBase0Hi] = base0 + static_cast<uint32_t>(__builtin_popcount(llo));
    out[kVectorLo] = vlo;
    out[kBase1Lo] = base1;
    out[kLeafvecLo] = llo;
    out[kBase0Lo] = base0;
  }

  // `words`: the chip memory (or its host shadow); `host`: the host trie's words.
  PoptrieImage(uint32_t* words, size_t size, const uint32_t* host, size_t host_size,
               int direct_bits, bool log);

  // The host trie changed for the prefix `key`/`length` (key left-aligned in 128 bits):
  // bring every direct entry it covers up to date, as one numbered update.  On a full
  // memory throws TrieError; the direct entry that failed is unchanged.  `marked`: the host
  // trie marked the rows it changed into row_marks(); a node whose host row and whose
  // parent's row are unmarked is known unchanged (only its children may change), so it is
  // not rescanned (a short prefix covers thousands of such nodes).
  void refresh(u128 key, int length, bool marked = false);
  // The host trie's routes (its words must be `host`): with it, refresh_update() of a
  // prefix of length l skips, unread, every node whose host ply's subtree minimum depth
  // exceeds l + 1 (Trie::subtree_min: nothing there changed).
  void set_host_trie(const Trie* trie) { host_trie_ = trie; }
  // refresh() as the image side of the host trie's single update of this prefix (the skip
  // above applies; the plain refresh() assumes nothing about what changed).
  void refresh_update(u128 key, int length, bool marked) {
    skip_depth_ = host_trie_ ? length + 1 : kNoSkip;
    try {
      refresh(key, length, marked);
    } catch (...) {
      skip_depth_ = kNoSkip;
      throw;
    }
    skip_depth_ = kNoSkip;
  }
  // Where the host trie marks the rows it changes (Trie::set_row_marks); refresh() clears it.
  RowMarks& row_marks() { return marks_; }
  // Walk the host trie and the image down to the node of a prefix of `length` bits (key
  // left-aligned), both at once, and start loading what the update reads there: the host
  // plies' depths and minimums (set_host_trie), the last node's leaves and the last host
  // row.  Each walk is a chain of dependent cache misses on a large table; walked in one
  // loop the two chains overlap, where the update itself walks the host trie first and the
  // image after it.  Reads only (bounds-checked), counts and traces nothing: a hint.
  void touch_path(u128 key, int length) const;
  // For an update a batch will make later: start loading its two direct entries (no
  // load, so a miss here does not hold up the update being made meanwhile).
  void prefetch_entries(u128 key) const {
    const auto index = static_cast<uint32_t>(key >> (128 - direct_bits_));
    __builtin_prefetch(&host_[index]);
    __builtin_prefetch(&words_[index]);
  }
  // Every direct entry from the host trie, into zeroed words (the bulk build).
  void build();
  // Zero the words in use and forget every block (not safe for concurrent lookups).
  void clear();
  void reclaim(uint64_t upto);
  uint64_t number() const { return number_; }
  WriteLog take_log();
  PoptrieStats stats() const;
  // (take_counters, set_trace, take_trace: WorkRecord; the trace holds the index of every
  // word read, kHostTrace marking the host trie's.)
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> retired() const {
    return {retired_.begin(), retired_.end()};
  }

 private:
  struct Pending {
    std::vector<std::pair<uint32_t, uint32_t>> taken;   // new blocks (offset, size)
    std::vector<std::pair<uint32_t, uint32_t>> writes;  // (index, value) into new blocks
    struct Copy {
      uint32_t to, from, count;
    };
    // Runs of unchanged nodes copied from an old children block into a new one, done word
    // by word in one tight loop when the writes are applied (no (index, value) per word).
    std::vector<Copy> copies;
    void copy(uint32_t to, uint32_t from, uint32_t count) {
      if (!copies.empty() && copies.back().to + copies.back().count == to &&
          copies.back().from + copies.back().count == from)
        copies.back().count += count;
      else if (count)
        copies.push_back({to, from, count});
    }
    std::vector<std::pair<uint32_t, uint32_t>> links;   // base words rewritten in place
    std::vector<std::pair<uint32_t, uint32_t>> retire;  // old blocks, once linked
  };
  // How a node's header words change in an update: not at all; only its base words (its
  // bitmaps stay: the base words can be rewritten in place, each read alone); or its
  // bitmaps (the node needs a new copy, and so its siblings' block).
  enum class Change { kNone, kBases, kBitmaps };

  void refresh_range(u128 key, int length);  // the update itself
  void refresh_entry(uint32_t index, u128 low, u128 last);
  // A new subtree for host ply `ply` with its header at `at` (no old node to reuse).
  void build_node(uint32_t ply, uint32_t at, Pending& p);
  // Bring the node at `old` up to date with host ply `ply` for keys in [low, last]; how its
  // header words change (and, unless kNone, its new header in `header`).
  // `parent_clean`: the row above (the parent's, or the direct entry's) did not change.
  Change update_node(uint32_t ply, u128 start, int used, uint32_t old, u128 low, u128 last,
                     uint32_t header[kNodeWords], Pending& p, bool parent_clean);
  // Whether host row `index >> 6` may have changed in this update (always, unless the
  // update's host writes are known).
  bool dirty(uint32_t index) const { return !marks_known_ || marks_.marked(index); }
  // Whether the host ply's subtree is unchanged by this update (see set_host_trie); counts
  // the read of its minimum (or, if unknown, the scan of its 64 depth bytes: 16 words),
  // and a skipped node as visited.
  bool unchanged(uint32_t ply) {
    if (skip_depth_ == kNoSkip) return false;
    bool scanned = false;
    const int low = host_trie_->subtree_min(ply, scanned);
    counters_.host_words_read += scanned ? 16 : 1;
    if (tracing_) trace_.push_back(kHostTrace | ply);
    if (low <= skip_depth_) return false;  // the node is visited next
    ++counters_.nodes_visited;
    return true;
  }
  // A node at `at` whose bitmaps stay: its changed base words, to be rewritten in place
  // after the new blocks (each of a lookup's steps reads one base word, of its half, so it
  // follows the old or the new block: both are complete).
  void link_bases(uint32_t at, const uint32_t header[kNodeWords], Pending& p);
  // The host row's child bitmap, leaf bitmap and leaves (leaf compression).
  int scan(uint32_t ply, uint64_t& vector, uint64_t& leafvec, uint32_t leaves[64]);
  [[gnu::always_inline]] uint32_t read(uint32_t index) {
    ++counters_.image_words_read;
    if (tracing_) trace_.push_back(index);
    return words_[index];
  }
  // Copy `count` words of an old block into a new one (Pending::copies), counted as write().
  void copy_words(uint32_t to, uint32_t from, uint32_t count);
  void retire_below(uint32_t at, std::vector<std::pair<uint32_t, uint32_t>>& out);
  uint32_t alloc(uint32_t size, Pending& p);
  void release(uint32_t offset, uint32_t size);
  // A node's 64-bit bitmaps, read in the order of its words.
  uint64_t read_vector(uint32_t node) {
    const uint64_t hi = read(node + kVectorHi);
    return hi << 32 | read(node + kVectorLo);
  }
  uint64_t read_leafvec(uint32_t node) {
    const uint64_t hi = read(node + kLeafvecHi);
    return hi << 32 | read(node + kLeafvecLo);
  }
  [[gnu::always_inline]] void write(uint32_t index, uint32_t value) {
    if (words_[index] == value) return;
    ++counters_.words_written;
    std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_relaxed);
    if (logging_) log_write(index, value);
  }
  [[gnu::noinline]] void log_write(uint32_t index, uint32_t value) {
    log_.indices.push_back(index);
    log_.values.push_back(value);
  }
  void publish(uint32_t index, uint32_t value);  // a barrier, then link()
  void link(uint32_t index, uint32_t value);     // a store the readers may see at once
  void barrier();

  uint32_t* words_;
  size_t size_;
  const uint32_t* host_;
  size_t host_size_;
  int direct_bits_;
  uint32_t direct_words_;
  bool logging_;
  uint32_t next_free_;
  size_t live_words_ = 0;
  uint64_t number_ = 0;
  // Free blocks by size (words): a node's children (8 per child) or leaves (1 each), so
  // at most kMaxBlock; indexed directly, not hashed (an update allocates a few blocks).
  static constexpr uint32_t kMaxBlock = kNodeWords * 64;
  std::vector<std::vector<uint32_t>> free_;  // size -> offsets
  std::deque<std::tuple<uint32_t, uint32_t, uint64_t>> retired_;  // (offset, size, number)
  WriteLog log_;
  Pending pending_;  // one update's blocks and writes (kept to reuse its capacity)
  RowMarks marks_;  // the host rows (64 words) the update wrote
  bool marks_known_ = false;
  static constexpr int kNoSkip = 1 << 30;
  const Trie* host_trie_ = nullptr;
  int skip_depth_ = kNoSkip;  // refresh_update's l + 1
};

}  // namespace npkit::trie
