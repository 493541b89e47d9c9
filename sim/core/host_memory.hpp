// Zeroed, page-aligned host memory for the simulated memories, with cheap images for chip
// snapshots (docs/sim-core.md, "Snapshot and restore").
//
// The memory is mmap'd, so pages the simulation never touches cost nothing.  capture()
// writes the contents into a sealed-off in-memory file (memfd, zero pages left as holes)
// and maps the live memory copy-on-write onto that file, so the two share every page until
// the simulation (or the host through a numpy view) writes one.  restore() maps the
// image's file copy-on-write over the live memory again at the same address: the pages
// written since are dropped by the kernel, nothing is copied, and numpy views of the
// memory stay valid.  Small memories (below kImageFileBytes), and any memory when memfd is
// not available, are captured and restored by plain copies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace npkit {

// The contents of one HostMemory at a capture.  Immutable once made; shared by snapshots.
class MemoryImage {
 public:
  MemoryImage() = default;
  ~MemoryImage();
  MemoryImage(const MemoryImage&) = delete;
  MemoryImage& operator=(const MemoryImage&) = delete;
  size_t size_bytes() const { return size_; }
  // host bytes this image holds (file pages written plus any plain copy)
  size_t held_bytes() const { return held_; }

 private:
  friend class HostMemory;
  size_t size_ = 0;
  int fd_ = -1;                // memfd with the contents, or -1: `copy_` holds them
  std::vector<uint8_t> copy_;
  size_t held_ = 0;
};

class HostMemory {
 public:
  static constexpr size_t kImageFileBytes = size_t{1} << 20;

  HostMemory() = default;
  ~HostMemory();
  HostMemory(HostMemory&& other) noexcept;
  HostMemory& operator=(HostMemory&& other) noexcept;
  // Copies are deep and keep this memory's address when the sizes match (a restored ME's
  // local memory stays where numpy views point); they are meant for small memories.
  HostMemory(const HostMemory& other);
  HostMemory& operator=(const HostMemory& other);

  void allocate(size_t bytes);
  uint8_t* bytes() const { return base_; }
  size_t size_bytes() const { return size_; }

  std::shared_ptr<const MemoryImage> capture();
  // `image` must come from a memory of the same size.
  void restore(const MemoryImage& image);

 private:
  void release() noexcept;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;     // bytes asked for
  size_t mapped_ = 0;   // bytes mapped (whole pages)
};

}  // namespace npkit
