// Frames handed from Python -- a list of bytes, or an npkit.sim.frames.PackedFrames (one
// uint8 buffer and int64 offsets: no Python object per frame) -- read as (pointer, size)
// with the GIL held so that the work on them can run without it (analysis.cpp, tally.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tester {

using FrameBuffer = std::pair<const uint8_t*, size_t>;

// Frames as the packed buffer's arrays (PackedFrames.data, .offsets), checked: uint8 and
// int64, C-contiguous, the offsets non-decreasing and inside the buffer.
struct Packed {
  pybind11::array_t<uint8_t, pybind11::array::c_style> data;
  pybind11::array_t<int64_t, pybind11::array::c_style> offsets;
};

inline bool is_packed(const pybind11::handle& datas) {
  return !PyList_Check(datas.ptr()) && pybind11::hasattr(datas, "offsets") &&
         pybind11::hasattr(datas, "data");
}

inline Packed packed_arrays(const pybind11::handle& datas) {
  using U8 = pybind11::array_t<uint8_t, pybind11::array::c_style>;
  using I64 = pybind11::array_t<int64_t, pybind11::array::c_style>;
  pybind11::object data = datas.attr("data"), offsets = datas.attr("offsets");
  if (!pybind11::isinstance<U8>(data) || !pybind11::isinstance<I64>(offsets))
    throw pybind11::type_error("packed frames: data must be uint8 and offsets int64 arrays, "
                               "C-contiguous");
  Packed out{pybind11::reinterpret_borrow<U8>(data), pybind11::reinterpret_borrow<I64>(offsets)};
  if (out.data.ndim() != 1 || out.offsets.ndim() != 1 || out.offsets.size() < 1)
    throw pybind11::value_error("packed frames: 1-d arrays, at least one offset");
  const int64_t* o = out.offsets.data();
  const auto size = static_cast<int64_t>(out.data.size());
  for (pybind11::ssize_t i = 0; i < out.offsets.size(); i++) {
    if (o[i] < 0 || o[i] > size || (i > 0 && o[i] < o[i - 1]))
      throw pybind11::value_error("packed frames: offsets outside the buffer or decreasing");
  }
  return out;
}

// The first ``n`` frames of ``datas`` (a list of bytes or packed frames) as (pointer,
// size).  The pointers stay valid while the caller keeps ``datas`` alive, e.g. for the
// rest of a binding's call after the GIL is released.
inline std::vector<FrameBuffer> frame_buffers(const pybind11::handle& datas, size_t n) {
  std::vector<FrameBuffer> out(n);
  if (is_packed(datas)) {
    Packed p = packed_arrays(datas);
    if (static_cast<size_t>(p.offsets.size()) - 1 < n)
      throw pybind11::index_error("fewer frames than asked for");
    const uint8_t* d = p.data.data();
    const int64_t* o = p.offsets.data();
    for (size_t i = 0; i < n; i++) out[i] = {d + o[i], size_t(o[i + 1] - o[i])};
    return out;
  }
  if (!PyList_Check(datas.ptr())) throw pybind11::type_error("frames: a list of bytes or packed frames");
  pybind11::list list = pybind11::reinterpret_borrow<pybind11::list>(datas);
  if (static_cast<size_t>(pybind11::len(list)) < n)
    throw pybind11::index_error("fewer frames than asked for");
  for (size_t i = 0; i < n; i++) {
    char* data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(list[i].ptr(), &data, &size) != 0)
      throw pybind11::error_already_set();
    out[i] = {reinterpret_cast<const uint8_t*>(data), size_t(size)};
  }
  return out;
}

}  // namespace tester
