// The Poptrie image updater (docs/lpm.md, "Poptrie"; runtime/poptrie.py): path-copying
// updates of a Poptrie in chip memory, from a host-side leaf-pushed trie with the same
// geometry (a Trie with a D-bit root and 6-bit plies, whose words it reads).
//
// Layout in one 32-bit word memory: [0, 2^D) direct entries (kChild | node offset, or a
// leaf word); a node is 6 words: vector lo, hi; leafvec lo, hi; base1 (children, 6 words
// each); base0 (leaves).  New blocks are written into free memory, then (after a barrier)
// one direct entry switches to them; the old blocks are retired with the update's number
// until reclaim() ends their grace period.
#pragma once

#include <cstdint>
#include <deque>
#include <tuple>
#include <unordered_map>
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

class PoptrieImage {
 public:
  static constexpr int kStride = 6;
  static constexpr uint32_t kNodeWords = 6;

  // `words`: the chip memory (or its host shadow); `host`: the host trie's words.
  PoptrieImage(uint32_t* words, size_t size, const uint32_t* host, size_t host_size,
               int direct_bits, bool log);

  // The host trie changed for the prefix `key`/`length` (key left-aligned in 128 bits):
  // bring every direct entry it covers up to date, as one numbered update.  On a full
  // memory throws TrieError; the direct entry that failed is unchanged.
  void refresh(u128 key, int length);
  // Every direct entry from the host trie, into zeroed words (the bulk build).
  void build();
  // Zero the words in use and forget every block (not safe for concurrent lookups).
  void clear();
  void reclaim(uint64_t upto);
  uint64_t number() const { return number_; }
  WriteLog take_log();
  PoptrieStats stats() const;
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> retired() const {
    return {retired_.begin(), retired_.end()};
  }

 private:
  struct Pending {
    std::vector<std::pair<uint32_t, uint32_t>> taken;   // new blocks (offset, size)
    std::vector<std::pair<uint32_t, uint32_t>> writes;  // (index, value) into new blocks
    std::vector<std::pair<uint32_t, uint32_t>> retire;  // old blocks, once linked
  };

  void refresh_entry(uint32_t index, u128 low, u128 last);
  void node(uint32_t ply, u128 start, int used, int64_t old, uint32_t at, u128 low, u128 last,
            Pending& p);
  void retire_below(uint32_t at, std::vector<std::pair<uint32_t, uint32_t>>& out) const;
  uint32_t alloc(uint32_t size, Pending& p);
  void release(uint32_t offset, uint32_t size);
  uint64_t bits64(uint32_t at) const {
    return uint64_t{words_[at]} | uint64_t{words_[at + 1]} << 32;
  }
  void write(uint32_t index, uint32_t value);
  void publish(uint32_t index, uint32_t value);
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
  std::unordered_map<uint32_t, std::vector<uint32_t>> free_;  // size -> offsets
  std::deque<std::tuple<uint32_t, uint32_t, uint64_t>> retired_;  // (offset, size, number)
  WriteLog log_;
};

}  // namespace npkit::trie
