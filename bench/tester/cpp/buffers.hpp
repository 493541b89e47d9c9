// Frames handed from Python as a list of bytes, read as (pointer, size) with the GIL held
// so that the work on them can run without it (analysis.cpp, tally.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tester {

using FrameBuffer = std::pair<const uint8_t*, size_t>;

// The first ``n`` frames of ``datas`` (bytes objects) as (pointer, size).  The pointers stay
// valid while the caller keeps the list (and so the bytes) alive, e.g. for the rest of a
// binding's call after the GIL is released.
inline std::vector<FrameBuffer> frame_buffers(const pybind11::list& datas, size_t n) {
  if (static_cast<size_t>(pybind11::len(datas)) < n)
    throw pybind11::index_error("fewer frames than asked for");
  std::vector<FrameBuffer> out(n);
  for (size_t i = 0; i < n; i++) {
    char* data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(datas[i].ptr(), &data, &size) != 0)
      throw pybind11::error_already_set();
    out[i] = {reinterpret_cast<const uint8_t*>(data), size_t(size)};
  }
  return out;
}

}  // namespace tester
