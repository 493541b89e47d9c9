// Chip configuration: the numbers of sim/chips/*.toml, validated (config.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "media.hpp"

namespace npkit {

struct ChannelConfig {
  uint64_t latency = 0;              // cycles from the end of occupancy to the result
  double read_bytes_per_cycle = 1;   // channel bandwidth for reads
  double write_bytes_per_cycle = 1;  // and for writes
  uint32_t min_access_bytes = 4;     // a command occupies the channel for at least this much
};

struct HashConfig {
  uint64_t latency = 40;
  uint64_t occupancy = 4;             // cycles per key hashed
  // result = (key (x) multiplier) mod (x^W + polynomial) over GF(2), see docs/sim-core.md
  uint64_t multiplier[3][2] = {};     // [48/64/128][low, high 64 bits]
  uint64_t polynomial[3][2] = {};
};

struct ChipConfig {
  std::string name;
  std::vector<int> me_numbers;        // ACTIVE_CTX_STS ME number of each ME index
  double clock_hz = 1.4e9;
  int contexts = 8;
  uint32_t control_store_words = 8192;
  int gprs_per_bank = 128;
  int xfer_per_kind = 128;
  int nn_registers = 128;
  uint32_t local_memory_words = 640;
  int cam_entries = 16;
  int signals = 15;
  uint64_t branch_taken_penalty = 3;
  uint64_t lm_addr_delay = 3;
  int command_fifo_depth = 16;

  int sram_channels = 4;
  uint64_t sram_channel_bytes = 8 << 20;
  ChannelConfig sram;
  uint32_t queue_descriptors = 64;

  int dram_channels = 3;
  uint64_t dram_bytes = 256 << 20;
  ChannelConfig dram;
  uint64_t dram_interleave_bytes = 128;

  uint64_t scratch_bytes = 16384;
  ChannelConfig scratch;
  int rings = 16;
  uint32_t ring_min_words = 128;
  uint32_t ring_max_words = 1024;

  HashConfig hash;

  MediaConfig media{};
  uint64_t msf_csr_latency = 20;

  uint64_t deadlock_cycles = 1000000;
  uint64_t burst_cycles = 16;

  int num_mes() const { return static_cast<int>(me_numbers.size()); }
};

}  // namespace npkit
