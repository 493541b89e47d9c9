// Host-side arrays of the route updaters on transparent huge pages (2 MB) where the kernel
// offers them only on request (/sys/kernel/mm/transparent_hugepage/enabled = madvise, as
// on this project's machines).  An update reads a few bytes at random places in the route
// map (12 MB for the 2024 IPv6 table) and the host trie's depth bytes (32 MB): with 4 KB
// pages nearly every such read is a TLB miss as well as a cache miss, and in a virtual
// machine the page walk is itself nested.  (numpy already asks for huge pages for its large
// arrays: the trie words.)  Small arrays, and systems without madvise, use plain memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace npkit::trie {

inline constexpr size_t kHugePage = size_t{2} << 20;

// Memory for `bytes` (zero-filled, lazily, by the kernel), 2 MB-aligned and marked for
// huge pages if it is at least one huge page; release with huge_release(p, bytes).
inline void* huge_acquire(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHugePage) {
    const size_t size = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    // Map one huge page more, then unmap the unaligned head and the tail beyond `size`.
    void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + size + kHugePage;
    if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
    madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // a hint: may fail
    return reinterpret_cast<void*>(aligned);
  }
#endif
  void* p = std::calloc(bytes ? bytes : 1, 1);
  if (!p) throw std::bad_alloc();
  return p;
}

inline void huge_release(void* p, size_t bytes) noexcept {
  if (!p) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHugePage) {
    munmap(p, (bytes + kHugePage - 1) & ~(kHugePage - 1));
    return;
  }
#endif
  std::free(p);
}

// A zero-filled array of `count` T (trivial types) from huge_acquire.
template <class T>
struct HugeDeleter {
  size_t count = 0;
  void operator()(T* p) const noexcept { huge_release(p, count * sizeof(T)); }
};
template <class T>
using HugeArray = std::unique_ptr<T[], HugeDeleter<T>>;
template <class T>
HugeArray<T> huge_zeroed(size_t count) {
  return HugeArray<T>(static_cast<T*>(huge_acquire(count * sizeof(T))), HugeDeleter<T>{count});
}

// An allocator for std::vector: large buffers from huge_acquire.
template <class T>
struct HugeAllocator {
  using value_type = T;
  HugeAllocator() = default;
  template <class U>
  explicit HugeAllocator(const HugeAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(huge_acquire(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { huge_release(p, n * sizeof(T)); }
  bool operator==(const HugeAllocator&) const noexcept { return true; }
};

}  // namespace npkit::trie
