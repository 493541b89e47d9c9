// The analyzer's per-frame bookkeeping in C++ (bench/tester/analyzer.py gives the
// definitions; fast_analysis.py is the Python face).  Per sent frame it keeps 24 bytes: send
// time, ports, length, the expected output port and a 64-bit hash of the expected link
// header and IP packet (the frames themselves are not kept).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator.hpp"

namespace tester {

struct U128Hash {
  size_t operator()(u128 v) const {
    uint64_t x = uint64_t(v) ^ (uint64_t(v >> 64) * 0x9E3779B97F4A7C15ULL);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return size_t(x);
  }
};

// A router's expectation (RouteReference) or a wire's (PassThrough), as tables.
struct Reference {
  bool pass_through = true;
  std::vector<int> port_map;  // pass-through: input port -> output port (-1: none)
  // router: per family [v4, v6], prefix lengths longest first and (length -> network -> hop)
  std::array<std::vector<int>, 2> lengths;
  std::array<std::vector<std::unordered_map<u128, int, U128Hash>>, 2> tables;
  // [family][k] for a length of 16 or more: a bit per value of an address's first 16 bits,
  // set when tables[family][k] holds a network starting with them (empty: not kept).  A
  // lookup skips the lengths with no such network: no probe of a table that cannot match.
  std::array<std::vector<std::vector<uint64_t>>, 2> first16;
  // IPv4 with many routes: per /24 block the next hop of the longest prefix of length 24
  // or less holding it (-1: none), LONGER24 set when a longer prefix starts in the block
  // (its addresses are looked up in the tables).  One read a lookup instead of a probe
  // per length, each a cache miss in tables this large (empty: not kept, few routes).
  static constexpr int32_t LONGER24 = int32_t(1) << 30;
  std::vector<int32_t> dir24;
  std::vector<int> hop_port;  // next hop (numbered 0..) -> output port
  std::array<std::vector<std::string>, 2> hop_link;  // [family][hop] expected link header
  std::array<std::vector<char>, 2> hop_link_known;  // [family][hop]: link checked
  std::vector<char> pos_port;  // output port -> POS framing (the link is the PPP header)
};

struct SentEntry {
  int64_t time_ps = 0;
  uint64_t expected_hash = 0;
  int16_t port = 0;
  int16_t expected_port = -1;
  uint16_t length = 0;
  uint8_t flags = 0;  // PRESENT, ARRIVED, CHECK_LINK, CHECK_IP
};

struct Latency {
  int64_t count = 0;
  int64_t total = 0;
  bool any = false;
  int64_t min = 0, max = 0;
  double lifo_min = 0, lifo_max = 0, lifo_total = 0;
  std::map<int64_t, int64_t> histogram;
};

// A stream's sent frames by sequence number, in blocks allocated as sequence numbers come
// (no reallocation: a second of 40-byte frames never holds two copies of the table).
class SentTable {
 public:
  static constexpr size_t BLOCK = 1 << 16;
  SentEntry* find(size_t seq) const {
    size_t b = seq / BLOCK;
    return b < blocks_.size() && blocks_[b] ? &blocks_[b][seq % BLOCK] : nullptr;
  }
  SentEntry& at(size_t seq) {
    size_t b = seq / BLOCK;
    if (b >= blocks_.size()) blocks_.resize(b + 1);
    if (!blocks_[b]) blocks_[b] = std::make_unique<SentEntry[]>(BLOCK);
    return blocks_[b][seq % BLOCK];
  }
  template <typename F>
  void each(F&& visit) const {
    for (const auto& block : blocks_)
      if (block)
        for (size_t i = 0; i < BLOCK; i++) visit(block[i]);
  }

 private:
  std::vector<std::unique_ptr<SentEntry[]>> blocks_;
};

struct StreamState {
  int id = 0;
  SentTable sent;  // by sequence number
  int64_t n_sent = 0, received = 0, duplicates = 0, reordered = 0, misrouted = 0,
          corrupted = 0;
  int64_t next_expected = 0;
  Latency latency;
};

class Analysis {
 public:
  // ports: per port number, (framing POS?, wire numerator per byte, wire constant) in 1/D ps
  Analysis(std::vector<int> framing_pos, std::vector<u128> per_byte, std::vector<u128> fixed,
           u128 denominator, int64_t bin_ps, std::shared_ptr<const Reference> reference);
  // a sent frame; throws std::invalid_argument as the Python analyzer's _index does
  void sent(int port, int64_t time_ps, const uint8_t* data, size_t size, int record_stream,
            int64_t record_seq);
  void received(int port, int64_t time_ps, const uint8_t* data, size_t size);
  const std::vector<int>& order() const { return order_; }
  const StreamState& stream(int id) const { return streams_.at(id); }
  std::vector<StreamState*> in_order();
  int64_t foreign = 0, unknown = 0, corrupted_unattributed = 0;

 private:
  bool expect(int port, int family, const uint8_t* link, size_t link_len, const uint8_t* ip,
              size_t ip_len, SentEntry& entry) const;
  u128 wire(int port, size_t bytes) const { return per_byte_[port] * bytes + fixed_[port]; }

  std::vector<int> pos_;
  std::vector<u128> per_byte_, fixed_;
  u128 denominator_;
  int64_t bin_ps_;
  std::shared_ptr<const Reference> ref_;
  std::unordered_map<int, StreamState> streams_;
  std::vector<int> order_;  // stream ids in the order first sent
  mutable std::vector<uint8_t> scratch_;  // the forwarded packet being hashed
  int lookup(int f, u128 dst, int bits) const;
};

uint64_t hash_bytes(const uint8_t* p, size_t n, uint64_t seed);
double rational_to_double(bool negative, u128 num, u128 den);

}  // namespace tester
