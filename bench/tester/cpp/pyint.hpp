// Python ints <-> unsigned 128-bit integers for the tester's bindings.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>

#include "generator.hpp"

namespace tester {

// A non-negative Python int below 2**128 (addresses, ranges, schedule numerators).
inline u128 to_u128(pybind11::handle value) {
  PyObject* object = value.ptr();
  if (!PyLong_Check(object)) throw pybind11::type_error("an int is expected");
  int overflow = 0;
  long long small = PyLong_AsLongLongAndOverflow(object, &overflow);
  if (overflow == 0) {
    if (small == -1 && PyErr_Occurred()) throw pybind11::error_already_set();
    if (small < 0) throw std::invalid_argument("a non-negative int is expected");
    return static_cast<u128>(small);
  }
  if (overflow < 0) throw std::invalid_argument("a non-negative int is expected");
  unsigned char bytes[16];
  if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(object), bytes, 16, 0, 0) != 0)
    throw pybind11::error_already_set();  // OverflowError: 2**128 or more
  u128 out = 0;
  for (unsigned char c : bytes) out = (out << 8) | c;
  return out;
}

}  // namespace tester
