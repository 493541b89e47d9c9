// Host memory for the simulated memories and its snapshot images (host_memory.hpp).
#include "host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

namespace npkit {

namespace {

// Pages are checked for zero and written to the image file in blocks of this size: big
// enough for few system calls, small enough that sparse tables leave holes.
constexpr size_t kBlockBytes = 64 * 1024;

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

bool all_zero(const uint8_t* p, size_t n) {
  // compare 8 bytes at a time; n is a multiple of the page size except maybe at the end
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w) return false;
  }
  for (; i < n; ++i)
    if (p[i]) return false;
  return true;
}

[[noreturn]] void sys_fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

MemoryImage::~MemoryImage() {
  if (fd_ >= 0) ::close(fd_);
}

HostMemory::~HostMemory() { release(); }

void HostMemory::release() noexcept {
  if (base_) ::munmap(base_, mapped_);
  base_ = nullptr;
  size_ = mapped_ = 0;
}

HostMemory::HostMemory(HostMemory&& other) noexcept
    : base_(other.base_), size_(other.size_), mapped_(other.mapped_) {
  other.base_ = nullptr;
  other.size_ = other.mapped_ = 0;
}

HostMemory& HostMemory::operator=(HostMemory&& other) noexcept {
  if (this != &other) {
    release();
    std::swap(base_, other.base_);
    std::swap(size_, other.size_);
    std::swap(mapped_, other.mapped_);
  }
  return *this;
}

HostMemory::HostMemory(const HostMemory& other) {
  allocate(other.size_);
  if (size_) std::memcpy(base_, other.base_, size_);
}

HostMemory& HostMemory::operator=(const HostMemory& other) {
  if (this == &other) return *this;
  if (size_ != other.size_) allocate(other.size_);
  if (size_) std::memcpy(base_, other.base_, size_);
  return *this;
}

void HostMemory::allocate(size_t bytes) {
  release();
  const size_t page = page_bytes();
  const size_t mapped = std::max(page, (bytes + page - 1) / page * page);
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  mapped_ = mapped;
}

std::shared_ptr<const MemoryImage> HostMemory::capture() {
  auto image = std::make_shared<MemoryImage>();
  image->size_ = size_;
  int fd = size_ >= kImageFileBytes ? ::memfd_create("npkit-snapshot", MFD_CLOEXEC) : -1;
  if (fd < 0) {
    image->copy_.assign(base_, base_ + size_);
    image->held_ = size_;
    return image;
  }
  image->fd_ = fd;  // closed by the image from here on
  if (::ftruncate(fd, static_cast<off_t>(mapped_)) != 0) sys_fail("snapshot: ftruncate");
  for (size_t off = 0; off < mapped_; off += kBlockBytes) {
    const size_t n = std::min(kBlockBytes, mapped_ - off);
    if (all_zero(base_ + off, n)) continue;  // a hole reads as zeros
    for (size_t done = 0; done < n;) {
      ssize_t w = ::pwrite(fd, base_ + off + done, n - done, static_cast<off_t>(off + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        sys_fail("snapshot: pwrite");
      }
      done += static_cast<size_t>(w);
    }
    image->held_ += n;
  }
  // The live memory now equals the file: share its pages copy-on-write (this also gives
  // back the anonymous pages that held the same contents).
  restore(*image);
  return image;
}

void HostMemory::restore(const MemoryImage& image) {
  if (image.size_ != size_)
    throw std::invalid_argument("restore: memory image of " + std::to_string(image.size_) +
                                " bytes for a memory of " + std::to_string(size_));
  if (image.fd_ < 0) {
    if (size_) std::memcpy(base_, image.copy_.data(), size_);
    return;
  }
  void* p = ::mmap(base_, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, image.fd_, 0);
  if (p == MAP_FAILED) sys_fail("restore: mmap");
}

}  // namespace npkit
