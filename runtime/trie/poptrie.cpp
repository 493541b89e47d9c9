// The Poptrie image updater: see poptrie.hpp and docs/lpm.md ("Poptrie").
#include "poptrie.hpp"

#include <atomic>
#include <string>

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
}

uint32_t PoptrieImage::alloc(uint32_t size, Pending& p) {
  uint32_t offset;
  auto spare = free_.find(size);
  if (spare != free_.end() && !spare->second.empty()) {
    offset = spare->second.back();
    spare->second.pop_back();
  } else if (size_t{next_free_} + size <= size_) {
    offset = next_free_;
    next_free_ += size;
  } else {
    throw TrieError("the Poptrie memory is full (" + std::to_string(size_) + " words)");
  }
  live_words_ += size;
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

void PoptrieImage::write(uint32_t index, uint32_t value) {
  if (words_[index] == value) return;
  std::atomic_ref<uint32_t>(words_[index]).store(value, std::memory_order_relaxed);
  if (logging_) {
    log_.indices.push_back(index);
    log_.values.push_back(value);
  }
}

void PoptrieImage::barrier() {
  if (!logging_) return;
  const uint64_t position = log_.indices.size();
  if (log_.barriers.empty() || log_.barriers.back() != position)
    log_.barriers.push_back(position);
}

void PoptrieImage::publish(uint32_t index, uint32_t value) {
  barrier();
  if (words_[index] == value) return;
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

void PoptrieImage::refresh(u128 key, int length) {
  ++number_;
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

void PoptrieImage::build() {
  ++number_;
  for (uint32_t index = 0; index < direct_words_; ++index)
    if (host_[index] != words_[index]) refresh_entry(index, 0, 0);
}

void PoptrieImage::clear() {
  for (uint32_t i = 0; i < next_free_; ++i) words_[i] = 0;
  next_free_ = direct_words_;
  live_words_ = 0;
  free_.clear();
  retired_.clear();
  log_ = WriteLog{};
}

void PoptrieImage::refresh_entry(uint32_t index, u128 low, u128 last) {
  const uint32_t host = host_[index];
  const uint32_t old = words_[index];
  if (host & kChild) {
    Pending p;
    uint32_t root;
    const int64_t old_root = old & kChild ? int64_t{old & kPointerMask} : -1;
    try {
      root = alloc(kNodeWords, p);
      node(host & kPointerMask, u128{index} << (128 - direct_bits_), direct_bits_, old_root,
           root, low, last, p);
    } catch (const TrieError&) {
      for (const auto& [offset, size] : p.taken) release(offset, size);
      throw;
    }
    for (const auto& [i, value] : p.writes) write(i, value);
    publish(index, kChild | root);
    for (const auto& [offset, size] : p.retire) {
      live_words_ -= size;
      retired_.emplace_back(offset, size, number_);
    }
    if (old_root >= 0) {
      live_words_ -= kNodeWords;
      retired_.emplace_back(static_cast<uint32_t>(old_root), kNodeWords, number_);
    }
  } else {
    write(index, host);
    if (old & kChild) {
      std::vector<std::pair<uint32_t, uint32_t>> out{{old & kPointerMask, kNodeWords}};
      retire_below(old & kPointerMask, out);
      for (const auto& [offset, size] : out) {
        live_words_ -= size;
        retired_.emplace_back(offset, size, number_);
      }
    }
  }
}

void PoptrieImage::retire_below(uint32_t at,
                                std::vector<std::pair<uint32_t, uint32_t>>& out) const {
  const uint64_t vector = bits64(at), leafvec = bits64(at + 2);
  const int kids = __builtin_popcountll(vector);
  if (kids) {
    const uint32_t base1 = words_[at + 4];
    for (int i = 0; i < kids; ++i) retire_below(base1 + kNodeWords * i, out);
    out.emplace_back(base1, kNodeWords * kids);
  }
  if (leafvec) out.emplace_back(words_[at + 5], __builtin_popcountll(leafvec));
}

void PoptrieImage::node(uint32_t ply, u128 start, int used, int64_t old, uint32_t at,
                        u128 low, u128 last, Pending& p) {
  if (size_t{ply} + 64 > host_size_) throw TrieError("Poptrie: host ply out of range");
  const uint32_t* row = host_ + ply;
  uint64_t vector = 0;
  for (int k = 0; k < 64; ++k)
    if (row[k] & kChild) vector |= uint64_t{1} << k;
  const int kids = __builtin_popcountll(vector);
  const int below = 128 - used - kStride;  // key bits under one slot
  uint64_t old_vector = 0;
  uint32_t old_base1 = 0;
  if (old >= 0) {
    const auto o = static_cast<uint32_t>(old);
    old_vector = bits64(o);
    old_base1 = words_[o + 4];
    const uint64_t old_leafvec = bits64(o + 2);
    if (old_leafvec) p.retire.emplace_back(words_[o + 5], __builtin_popcountll(old_leafvec));
    if (old_vector) p.retire.emplace_back(old_base1, kNodeWords * __builtin_popcountll(old_vector));
  }
  auto old_child = [&](int k) -> int64_t {
    if (!(old_vector >> k & 1)) return -1;
    return int64_t{old_base1} + kNodeWords * (__builtin_popcountll(old_vector & rank_mask(k)) - 1);
  };
  const uint32_t base1 = kids ? alloc(kNodeWords * kids, p) : 0;
  int i = 0;
  const u128 span = below == 0 ? u128{0} : (u128{1} << below) - 1;
  for (int k = 0; k < 64; ++k) {
    if (!(vector >> k & 1)) continue;
    const u128 first = start | (u128(k) << below);
    const int64_t previous = old_child(k);
    const uint32_t dest = base1 + kNodeWords * i++;
    if (previous >= 0 && ((first | span) < low || first > last)) {
      for (uint32_t j = 0; j < kNodeWords; ++j)
        p.writes.emplace_back(dest + j, words_[previous + j]);
    } else {
      node(row[k] & kPointerMask, first, used + kStride, previous, dest, low, last, p);
    }
  }
  for (int k = 0; k < 64; ++k)  // old children that became leaves
    if ((old_vector >> k & 1) && !(vector >> k & 1))
      retire_below(static_cast<uint32_t>(old_child(k)), p.retire);
  uint64_t leafvec = 0;
  uint32_t leaves[64];
  int count = 0;
  for (int k = 0; k < 64; ++k) {
    if (vector >> k & 1) continue;
    if (count == 0 || row[k] != leaves[count - 1]) {
      leafvec |= uint64_t{1} << k;
      leaves[count++] = row[k];
    }
  }
  const uint32_t base0 = count ? alloc(count, p) : 0;
  for (int j = 0; j < count; ++j) p.writes.emplace_back(base0 + j, leaves[j]);
  const uint32_t node_words[kNodeWords] = {
      static_cast<uint32_t>(vector), static_cast<uint32_t>(vector >> 32),
      static_cast<uint32_t>(leafvec), static_cast<uint32_t>(leafvec >> 32), base1, base0};
  for (uint32_t j = 0; j < kNodeWords; ++j) p.writes.emplace_back(at + j, node_words[j]);
}

PoptrieStats PoptrieImage::stats() const {
  size_t retired = 0, free = 0;
  for (const auto& r : retired_) retired += std::get<1>(r);
  for (const auto& [size, offsets] : free_) free += size_t{size} * offsets.size();
  return {live_words_, retired, free, next_free_, number_};
}

}  // namespace npkit::trie
