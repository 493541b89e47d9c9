// Chip configuration from Python (config.cpp).
#pragma once
#include <pybind11/pybind11.h>

#include "config.hpp"
#include "isa_gen.hpp"

namespace npkit {
ChipConfig parse_config(const pybind11::dict& root);  // raises ValueError naming the bad key
}
