// A batch of frames tallied per frame length in C++ (tally.cpp; bench/tester/tally.py).
#pragma once

#include <pybind11/pybind11.h>

namespace tester {

void bind_tally(pybind11::module_& m);

}  // namespace tester
