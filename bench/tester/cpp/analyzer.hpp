// The analyzer's per-frame parsing in C++: frames taken apart as bench/tester/packet.py's
// parse() and read_signature() do, a batch at a time, into columns.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>

namespace tester {

enum Status : int8_t { NOT_IP = 0, NO_SIGNATURE = 1, SIGNATURE = 2 };

// A frame taken apart as packet.parse() does (status NOT_IP: parse() gives None).
struct Parsed {
  int8_t status = NOT_IP;
  int8_t family = 0;
  int16_t link = 0;  // link header bytes (the IP packet starts here)
  int32_t ip_len = 0;
  int32_t stream = 0;
  int64_t seq = 0;
  int64_t time_ps = 0;
  int8_t crc_ok = 0;
};

Parsed parse(bool pos, const uint8_t* d, size_t n);

void bind_analyzer(pybind11::module_& m);
void bind_analysis(pybind11::module_& m);

}  // namespace tester
