// The analyzer's per-frame parsing in C++: frames taken apart as bench/tester/packet.py's
// parse() and read_signature() do, a batch at a time, into columns.
#pragma once

#include <pybind11/pybind11.h>

namespace tester {

void bind_analyzer(pybind11::module_& m);

}  // namespace tester
