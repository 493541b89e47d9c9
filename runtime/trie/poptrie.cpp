// The Poptrie image updater: see poptrie.hpp and docs/lpm.md ("Poptrie").
#include "poptrie.hpp"

#include <atomic>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The bitmaps' popcounts as one instruction (x86-64 has had it since 2008), not a libgcc call.
#if defined(__x86_64__)
#pragma GCC target("popcnt")
#endif

namespace npkit::trie {
namespace {

constexpr uint64_t rank_mask(int k) { return k == 63 ? ~uint64_t{0} : (uint64_t{2} << k) - 1; }

}  // namespace

PoptrieImage::PoptrieImage(uint32_t* words, size_t size, const uint32_t* host,
                           size_t host_size, int direct_bits, bool log)
    : words_(words),
      size_(size),
      host_(host),
      host_size_(host_size),
      direct_bits_(direct_bits),
      logging_(log) {
  if (direct_bits < 1 || direct_bits > 24) throw TrieError("bad Poptrie direct bits");
  direct_words_ = 1u << direct_bits;
  if (size < direct_words_ || host_size < direct_words_)
    throw TrieError("the Poptrie needs a uint32 memory of at least " +
                    std::to_string(direct_words_) + " words");
  if (size > (size_t{1} << 31))
    throw TrieError("a Poptrie memory holds at most 2^31 words (31-bit offsets)");
  next_free_ = direct_words_;
  free_.resize(kMaxBlock + 1);
  marks_.bits.assign(host_size / 64 / 64 + 1, 0);
}

uint32_t PoptrieImage::alloc(uint32_t size, Pending& p) {
  uint32_t offset;
  if (size > kMaxBlock) throw TrieError("Poptrie: a block of " + std::to_string(size) + " words");
  std::vector<uint32_t>& spare = free_[size];
  if (!spare.empty()) {
    offset = spare.back();
    spare.pop_back();
    // A reused block was retired at least one update ago: its lines are likely cold, and
    // the update writes it (compare, then store) only after scanning the host row.
    __builtin_prefetch(&words_[offset], 1);
    if (size > 16) __builtin_prefetch(&words_[offset + size - 1], 1);
  } else if (size_t{next_free_} + size <= size_) {
    offset = next_free_;
    next_free_ += size;
  } else {
    throw TrieError("the Poptrie memory is full (" + std::to_string(size_) + " words)");
  }
  live_words_ += size;
  ++counters_.blocks_allocated;
  p.taken.emplace_back(offset, size);
  return offset;
}

void PoptrieImage::release(uint32_t offset, uint32_t size) {
  live_words_ -= size;
  free_[size].push_back(offset);
}

void PoptrieImage::reclaim(uint64_t upto) {
  while (!retired_.empty() && std::get<2>(retired_.front()) <= upto) {
    const auto [offset, size, number] = retired_.front();
    retired_.pop_front();
    free_[size].push_back(offset);
  }
  barrier();  // no write into a reused block may overtake the write that unlinked it
}

// ---- word writes ----

void PoptrieImage::barrier() {
  if (!logging_) return;
  const uint64_t position = log_.indices.size();
  if (log_.barriers.empty() || log_.barriers.back() != position)
    log_.barriers.push_back(position);
}

void PoptrieImage::publish(uint32_t index, uint32_t value) {
  barrier();
  link(index, value);
}

void PoptrieImage::link(uint32_t index, uint32_t value) {
  if (words_[index] == value) return;
  ++counters_.words_written;
  std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_release);
  if (logging_) {
    log_.indices.push_back(index);
    log_.values.push_back(value);
  }
}

WriteLog PoptrieImage::take_log() {
  WriteLog out;
  std::swap(out, log_);
  return out;
}

// ---- updates ----

void PoptrieImage::refresh(u128 key, int length, bool marked) {
  marks_known_ = marked;
  try {
    refresh_range(key, length);
  } catch (...) {
    marks_known_ = false;
    marks_.clear();
    throw;
  }
  marks_known_ = false;
  marks_.clear();
}

void PoptrieImage::refresh_range(u128 key, int length) {
  ++number_;
  ++counters_.updates;
  const u128 low = key;
  const u128 last = key | (length == 0 ? ~u128{0} : length == 128 ? u128{0}
                                                   : (u128{1} << (128 - length)) - 1);
  const int shift = 128 - direct_bits_;
  const auto first = static_cast<uint32_t>(low >> shift);
  const auto end = static_cast<uint32_t>(last >> shift);
  for (uint32_t index = first;; ++index) {
    refresh_entry(index, low, last);
    if (index == end) break;
  }
}

void PoptrieImage::touch_path(u128 key, int length) const {
  const auto index = static_cast<uint32_t>(key >> (128 - direct_bits_));
  uint32_t host = host_[index];
  uint32_t entry = words_[index];
  uint32_t node = 0;
  // The host trie's update compares the root slot's depth byte (its first slot, painted or
  // grown under).
  if (host_trie_) host_trie_->prefetch_depth(index);
  for (int used = direct_bits_; used < length; used += kStride) {
    const auto v = static_cast<uint32_t>(key >> (128 - used - kStride)) & 63;
    if (host & kChild) {
      const uint32_t ply = host & kPointerMask;
      if (size_t{ply} + 64 > host_size_) break;
      if (host_trie_) host_trie_->prefetch_ply(ply);
      host = host_[ply + v];
      if (used + kStride >= length)  // the prefix's own row: scanned whole
        for (uint32_t k = 0; k < 64; k += 16) __builtin_prefetch(&host_[ply + k]);
    }
    node = 0;
    if (entry & kChild) {
      node = entry & kPointerMask;
      if (size_t{node} + kNodeWords > size_) break;
      __builtin_prefetch(&words_[node + kNodeWords - 1]);  // the header may span two lines
      const uint32_t half = node + ((v >> 3) & 4), s = v & 31;
      const uint32_t vector = words_[half + kVectorLo];
      entry = vector >> s & 1 ? kChild | (words_[half + kBase1Lo] +
                                          kNodeWords * (static_cast<uint32_t>(__builtin_popcount(
                                                            vector & ((2u << s) - 1))) -
                                                        1))
                              : 0;
    }
    if (!(host & kChild) && !(entry & kChild)) break;
  }
  if (node != 0) {  // the last node's leaves, compared when its row changes
    const uint32_t base0 = words_[node + kBase0Lo];
    if (base0 < size_) __builtin_prefetch(&words_[base0]);
  }
}

void PoptrieImage::build() {
  ++number_;
  for (uint32_t index = 0; index < direct_words_; ++index)
    if (host_[index] != words_[index]) refresh_entry(index, 0, 0);
}

void PoptrieImage::clear() {
  for (uint32_t i = 0; i < next_free_; ++i) words_[i] = 0;
  next_free_ = direct_words_;
  live_words_ = 0;
  for (auto& offsets : free_) offsets.clear();
  retired_.clear();
  log_ = WriteLog{};
}

void PoptrieImage::refresh_entry(uint32_t index, u128 low, u128 last) {
  ++counters_.entries;
  if (tracing_) trace_.push_back(kHostTrace | index);
  const uint32_t host = host_[index];
  const uint32_t old = read(index);
  Pending& p = pending_;
  p.taken.clear();
  p.writes.clear();
  p.copies.clear();
  p.links.clear();
  p.retire.clear();
  if (host & kChild) {
    const uint32_t ply = host & kPointerMask;
    uint32_t root = 0;
    try {
      if (old & kChild) {
        uint32_t header[kNodeWords];
        const uint32_t old_root = old & kPointerMask;
        if (unchanged(ply)) return;  // (nothing taken, written or retired yet)
        const Change change = update_node(ply, u128{index} << (128 - direct_bits_),
                                          direct_bits_, old_root, low, last, header, p,
                                          !dirty(index));
        if (change == Change::kBitmaps) {
          root = alloc(kNodeWords, p);
          for (uint32_t j = 0; j < kNodeWords; ++j) p.writes.emplace_back(root + j, header[j]);
          p.retire.emplace_back(old_root, kNodeWords);
        } else if (change == Change::kBases) {
          link_bases(old_root, header, p);
        }
      } else {
        root = alloc(kNodeWords, p);
        build_node(ply, root, p);
      }
    } catch (const TrieError&) {
      for (const auto& [offset, size] : p.taken) release(offset, size);
      throw;
    }
    // In-place leaf writes and the new blocks' words; then the linking writes: base words
    // rewritten in place, or the direct entry.  (The copies read old blocks, which no write
    // of the update changes: in-place writes go to leaves and, after the barrier, to base
    // words of nodes that are not copied.)
    for (const Pending::Copy& c : p.copies) copy_words(c.to, c.from, c.count);
    for (const auto& [i, value] : p.writes) write(i, value);
    if (!p.links.empty()) {
      barrier();
      for (const auto& [i, value] : p.links) link(i, value);
    }
    if (root) publish(index, kChild | root);
  } else {
    write(index, host);
    if (old & kChild) {
      p.retire.emplace_back(old & kPointerMask, kNodeWords);
      retire_below(old & kPointerMask, p.retire);
    }
  }
  for (const auto& [offset, size] : p.retire) {
    live_words_ -= size;
    retired_.emplace_back(offset, size, number_);
  }
  counters_.blocks_retired += p.retire.size();
}

void PoptrieImage::copy_words(uint32_t to, uint32_t from, uint32_t count) {
  counters_.image_words_read += count;
  if (tracing_)
    for (uint32_t j = 0; j < count; ++j) trace_.push_back(from + j);
  uint32_t j = 0;
#if defined(__SSE2__)
  // Four words per step: `to` is a new block that no lookup can reach before the update
  // links it (after a barrier), so plain stores do; an unchanged word is stored again but,
  // as write() does, counted only if it changes.  With the write log on, word by word.
  if (!logging_) {
    // (The count and the base in locals: the 16-byte stores may alias the members.)
    uint32_t* const words = words_;
    uint64_t written = 0;
    for (; j + 4 <= count; j += 4) {
      const __m128i value = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + from + j));
      auto* const dest = reinterpret_cast<__m128i*>(words + to + j);
      const int same =
          _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(value, _mm_loadu_si128(dest))));
      written += 4 - static_cast<uint64_t>(__builtin_popcount(same));
      _mm_storeu_si128(dest, value);
    }
    counters_.words_written += written;
  }
#endif
  for (; j < count; ++j) write(to + j, words_[from + j]);
}

void PoptrieImage::retire_below(uint32_t at,
                                std::vector<std::pair<uint32_t, uint32_t>>& out) {
  const uint64_t vector = read_vector(at), leafvec = read_leafvec(at);
  const int kids = __builtin_popcountll(vector);
  if (kids) {
    const uint32_t base1 = read(at + kBase1Lo);
    for (int i = 0; i < kids; ++i) retire_below(base1 + kNodeWords * i, out);
    out.emplace_back(base1, kNodeWords * kids);
  }
  if (leafvec) out.emplace_back(read(at + kBase0Lo), __builtin_popcountll(leafvec));
}

int PoptrieImage::scan(uint32_t ply, uint64_t& vector, uint64_t& leafvec, uint32_t leaves[64]) {
  if (size_t{ply} + 64 > host_size_) throw TrieError("Poptrie: host ply out of range");
  ++counters_.nodes_visited;
  counters_.host_words_read += 64;
  if (tracing_)
    for (uint32_t k = 0; k < 64; k += 8) trace_.push_back(kHostTrace | (ply + k));
  const uint32_t* row = host_ + ply;
#if defined(__SSE2__)
  // Four slots per step: the CHILD bit is each word's sign bit (movemask), and a leaf run
  // starts where a word differs from the slot before it.  That is the rule below except
  // after a child slot, where the run is compared with the last leaf before the child:
  // those (few) slots are fixed up one by one.
  uint64_t child = 0, same = 0;  // bit k: row[k] is a child; row[k] == row[k - 1]
  for (int k = 0; k < 64; k += 4) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k));
    child |= uint64_t(static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(w)))) << k;
    const __m128i before =  // slot 0 has none: its lane is cleared below
        k == 0 ? _mm_slli_si128(w, 4)
               : _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k - 1));
    const int equal = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(w, before)));
    same |= uint64_t(static_cast<uint32_t>(equal)) << k;
  }
  same &= ~uint64_t{1};
  vector = child;
  uint64_t starts = ~child & ~same;
  for (uint64_t after = ~child & (child << 1); after; after &= after - 1) {
    const int k = __builtin_ctzll(after);
    const uint64_t before = ~child & ((uint64_t{1} << k) - 1);  // leaves before slot k
    const bool start = before == 0 || row[k] != row[63 - __builtin_clzll(before)];
    starts = start ? starts | (uint64_t{1} << k) : starts & ~(uint64_t{1} << k);
  }
  leafvec = starts;
  int count = 0;
  for (uint64_t v = starts; v; v &= v - 1) leaves[count++] = row[__builtin_ctzll(v)];
  return count;
#else
  vector = 0;
  leafvec = 0;
  int count = 0;
  for (int k = 0; k < 64; ++k) {
    const uint32_t word = row[k];
    if (word & kChild) {
      vector |= uint64_t{1} << k;
    } else if (count == 0 || word != leaves[count - 1]) {
      leafvec |= uint64_t{1} << k;
      leaves[count++] = word;
    }
  }
  return count;
#endif
}

void PoptrieImage::build_node(uint32_t ply, uint32_t at, Pending& p) {
  uint64_t vector, leafvec;
  uint32_t leaves[64];
  const int count = scan(ply, vector, leafvec, leaves);
  const uint32_t* row = host_ + ply;
  const int kids = __builtin_popcountll(vector);
  const uint32_t base1 = kids ? alloc(kNodeWords * kids, p) : 0;
  int i = 0;
  for (uint64_t v = vector; v; v &= v - 1)
    build_node(row[__builtin_ctzll(v)] & kPointerMask, base1 + kNodeWords * i++, p);
  const uint32_t base0 = count ? alloc(count, p) : 0;
  for (int j = 0; j < count; ++j) p.writes.emplace_back(base0 + j, leaves[j]);
  uint32_t header[kNodeWords];
  node_words(vector, leafvec, base1, base0, header);
  for (uint32_t j = 0; j < kNodeWords; ++j) p.writes.emplace_back(at + j, header[j]);
}

void PoptrieImage::link_bases(uint32_t at, const uint32_t header[kNodeWords], Pending& p) {
  // A base word changes with its block: both halves' words (hi = lo + the low half's count).
  if (read(at + kBase1Lo) != header[kBase1Lo]) {
    p.links.emplace_back(at + kBase1Lo, header[kBase1Lo]);
    p.links.emplace_back(at + kBase1Hi, header[kBase1Hi]);
  }
  if (read(at + kBase0Lo) != header[kBase0Lo]) {
    p.links.emplace_back(at + kBase0Lo, header[kBase0Lo]);
    p.links.emplace_back(at + kBase0Hi, header[kBase0Hi]);
  }
}

PoptrieImage::Change PoptrieImage::update_node(uint32_t ply, u128 start, int used, uint32_t old,
                                               u128 low, u128 last, uint32_t header[kNodeWords],
                                               Pending& p, bool parent_clean) {
  const uint64_t old_vector = read_vector(old);
  const uint32_t old_base1 = read(old + kBase1Lo), old_base0 = read(old + kBase0Lo);
  const uint64_t old_leafvec = read_leafvec(old);
  const uint32_t* row = host_ + ply;
  const int below = 128 - used - kStride;  // key bits under one slot
  const u128 span = below == 0 ? u128{0} : (u128{1} << below) - 1;
  auto old_child = [&](int k) -> uint32_t {
    return old_base1 + kNodeWords * (__builtin_popcountll(old_vector & rank_mask(k)) - 1);
  };
  // A prefix strictly inside one slot that is a child before and after (the node is an
  // ancestor of the prefix's own node): the node's bitmaps and leaves cannot change, only
  // that child.  Skip the slot scan and the leaf compare; copy the children block if the
  // child's header changed.
  const u128 node_last = start | (used == 0 ? ~u128{0} : (~u128{0} >> used));
  if (below > 0 && low >= start && last <= node_last && (low >> below) == (last >> below) &&
      last - low < span) {
    if (size_t{ply} + 64 > host_size_) throw TrieError("Poptrie: host ply out of range");
    const int k = static_cast<int>((low >> below) & 63);
    if ((row[k] & kChild) && (old_vector >> k & 1)) {
      ++counters_.nodes_visited;
      ++counters_.host_words_read;
      if (tracing_) trace_.push_back(kHostTrace | (ply + static_cast<uint32_t>(k)));
      uint32_t child[kNodeWords];
      const Change change = update_node(row[k] & kPointerMask, start | (u128(k) << below),
                                        used + kStride, old_child(k), low, last, child, p,
                                        !dirty(ply));
      if (change == Change::kNone) return Change::kNone;
      if (change == Change::kBases) {  // the child stays where it is
        link_bases(old_child(k), child, p);
        return Change::kNone;
      }
      const int kids = __builtin_popcountll(old_vector);
      const uint32_t base1 = alloc(kNodeWords * kids, p);
      const uint32_t mine = old_child(k) - old_base1;
      p.copy(base1, old_base1, mine);
      for (uint32_t j = 0; j < kNodeWords; ++j) p.writes.emplace_back(base1 + mine + j, child[j]);
      p.copy(base1 + mine + kNodeWords, old_base1 + mine + kNodeWords,
             kNodeWords * kids - mine - kNodeWords);
      p.retire.emplace_back(old_base1, kNodeWords * kids);
      node_words(old_vector, old_leafvec, base1, old_base0, header);
      return Change::kBases;
    }
  }
  // A row that did not change under a parent row that did not change (so this node is
  // the same host ply as before): its bitmaps and leaves are as in the image; only its
  // children may change.  Otherwise scan the row.
  const bool clean = parent_clean && !dirty(ply);
  uint64_t vector = old_vector, leafvec = old_leafvec;
  uint32_t leaves[64];
  int count = 0;
  if (clean) {
    if (size_t{ply} + 64 > host_size_) throw TrieError("Poptrie: host ply out of range");
    ++counters_.nodes_visited;
    ++counters_.host_words_read;  // the row's mark
  } else {
    __builtin_prefetch(&words_[old_base0]);  // compared below, after the scan
    count = scan(ply, vector, leafvec, leaves);
  }
  const int kids = __builtin_popcountll(vector);
  // Children the update reaches: their new headers, if they change.
  uint32_t changed[64][kNodeWords];
  uint64_t changed_mask = 0, reshaped_mask = 0;  // children with new headers, new bitmaps
  // The slots whose keys meet [low, last] are one run, k_low..k_high: a mask, not two
  // 128-bit compares per child (a short prefix's node has dozens of children outside).
  uint64_t reach = 0;
  if (last >= start && low <= node_last) {
    const int k_low = low <= start ? 0 : static_cast<int>((low - start) >> below);
    const int k_high = last >= node_last ? 63 : static_cast<int>((last - start) >> below);
    reach = rank_mask(k_high) & (~uint64_t{0} << k_low);
  }
  for (uint64_t v = vector & old_vector & reach; v; v &= v - 1) {
    const int k = __builtin_ctzll(v);
    const u128 first = start | (u128(k) << below);
    if (unchanged(row[k] & kPointerMask)) continue;
    if (clean) {  // the child slot's word, not read by a scan
      ++counters_.host_words_read;
      if (tracing_) trace_.push_back(kHostTrace | (ply + static_cast<uint32_t>(k)));
    }
    const Change change = update_node(row[k] & kPointerMask, first, used + kStride,
                                      old_child(k), low, last, changed[k], p, !dirty(ply));
    if (change != Change::kNone) changed_mask |= uint64_t{1} << k;
    if (change == Change::kBitmaps) reshaped_mask |= uint64_t{1} << k;
  }
  uint32_t base1 = old_base1;
  if (vector == old_vector && !reshaped_mask) {
    // Same children, each with its bitmaps: the block stays, changed base words in place.
    for (uint64_t v = changed_mask; v; v &= v - 1) {
      const int k = __builtin_ctzll(v);
      link_bases(old_child(k), changed[k], p);
    }
  } else {  // a new children block
    base1 = kids ? alloc(kNodeWords * kids, p) : 0;
    int i = 0;
    for (uint64_t v = vector; v; v &= v - 1) {
      const int k = __builtin_ctzll(v);
      const uint32_t dest = base1 + kNodeWords * i++;
      if (changed_mask >> k & 1) {
        for (uint32_t j = 0; j < kNodeWords; ++j) p.writes.emplace_back(dest + j, changed[k][j]);
      } else if (old_vector >> k & 1) {
        const uint32_t from = old_child(k);
        p.copy(dest, from, kNodeWords);
      } else {
        build_node(row[k] & kPointerMask, dest, p);
      }
    }
    for (uint64_t v = old_vector & ~vector; v; v &= v - 1)  // old children now leaves
      retire_below(old_child(__builtin_ctzll(v)), p.retire);
    if (old_vector) p.retire.emplace_back(old_base1, kNodeWords * __builtin_popcountll(old_vector));
  }
  uint32_t base0 = old_base0;
  if (clean) {
    // the leaves are as they were
  } else if (vector == old_vector && leafvec == old_leafvec) {
    // Same slots, same leaf runs: rewrite the leaves that changed in place.  Each old leaf
    // is read (counted and traced as read() does, in order); compared four at a time.
    counters_.image_words_read += static_cast<uint64_t>(count);
    if (tracing_)
      for (int j = 0; j < count; ++j) trace_.push_back(old_base0 + static_cast<uint32_t>(j));
    int j = 0;
#if defined(__SSE2__)
    for (; j + 4 <= count; j += 4) {
      const __m128i was = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words_ + old_base0 + j));
      const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(leaves + j));
      const int same = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(was, now)));
      if (same == 0xF) continue;
      for (int i = 0; i < 4; ++i)
        if (!(same >> i & 1)) p.writes.emplace_back(old_base0 + j + i, leaves[j + i]);
    }
#endif
    for (; j < count; ++j)
      if (words_[old_base0 + j] != leaves[j]) p.writes.emplace_back(old_base0 + j, leaves[j]);
  } else {
    base0 = count ? alloc(count, p) : 0;
    for (int j = 0; j < count; ++j) p.writes.emplace_back(base0 + j, leaves[j]);
    if (old_leafvec) p.retire.emplace_back(old_base0, __builtin_popcountll(old_leafvec));
  }
  node_words(vector, leafvec, base1, base0, header);
  if (vector != old_vector || leafvec != old_leafvec) return Change::kBitmaps;
  return base1 != old_base1 || base0 != old_base0 ? Change::kBases : Change::kNone;
}

PoptrieStats PoptrieImage::stats() const {
  size_t retired = 0, free = 0;
  for (const auto& r : retired_) retired += std::get<1>(r);
  for (size_t size = 0; size < free_.size(); ++size) free += size * free_[size].size();
  return {live_words_, retired, free, next_free_, number_};
}

}  // namespace npkit::trie
