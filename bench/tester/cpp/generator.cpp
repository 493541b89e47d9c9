// The tester's traffic generator in C++ (npkit.bench.tester._fast): the per-frame work of
// bench/tester/generator.py -- the streams' seeded draws, exact pacing, header and signature
// building -- done in batches, with results identical to the Python generator.
//
// Exactness:
//  * every stream draws from Python's Mersenne Twister (random.Random), continued from the
//    state Python hands over (getstate()), with CPython's random(), getrandbits() and
//    _randbelow() and random.choices' bisection, so families, sizes and addresses are the
//    very values the Python generator draws;
//  * times are integers in units of 1/D ps, D the common denominator of every interval and
//    wire slot on the port (computed by Python with fractions), so no rounding accumulates
//    and a send time is ceil(start / D) as in the Python generator.
#include "generator.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tester {

// ------------------------------------------------------------------------ Mersenne Twister
namespace {
constexpr int MT_N = 624;
constexpr int MT_M = 397;
constexpr uint32_t MATRIX_A = 0x9908b0dfU;
constexpr uint32_t UPPER_MASK = 0x80000000U;
constexpr uint32_t LOWER_MASK = 0x7fffffffU;
}  // namespace

PyMt::PyMt(const std::vector<uint32_t>& state) {
  if (state.size() != MT_N + 1) throw std::invalid_argument("MT state: 625 words expected");
  std::copy(state.begin(), state.begin() + MT_N, mt_.begin());
  index_ = static_cast<int>(state[MT_N]);
}

uint32_t PyMt::next() {  // CPython's genrand_uint32
  static constexpr uint32_t mag01[2] = {0x0U, MATRIX_A};
  if (index_ >= MT_N) {
    int kk = 0;
    uint32_t y;
    for (; kk < MT_N - MT_M; kk++) {
      y = (mt_[kk] & UPPER_MASK) | (mt_[kk + 1] & LOWER_MASK);
      mt_[kk] = mt_[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
    }
    for (; kk < MT_N - 1; kk++) {
      y = (mt_[kk] & UPPER_MASK) | (mt_[kk + 1] & LOWER_MASK);
      mt_[kk] = mt_[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
    }
    y = (mt_[MT_N - 1] & UPPER_MASK) | (mt_[0] & LOWER_MASK);
    mt_[MT_N - 1] = mt_[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PyMt::random() {  // random_random: 53 bits
  uint32_t a = next() >> 5, b = next() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

u128 PyMt::getrandbits(int k) {  // k <= 128; words least significant first
  if (k <= 0) return 0;
  if (k <= 32) return next() >> (32 - k);
  u128 out = 0;
  int shift = 0;
  for (; k > 0; k -= 32, shift += 32) {
    uint32_t r = next();
    if (k < 32) r >>= (32 - k);
    out |= static_cast<u128>(r) << shift;
  }
  return out;
}

u128 PyMt::below(u128 n) {  // _randbelow_with_getrandbits
  int k = 0;
  for (u128 v = n; v; v >>= 1) k++;
  u128 r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

// ------------------------------------------------------------------------ checksums
namespace {
uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) acc += (uint32_t(p[i]) << 8) | p[i + 1];
  if (n & 1) acc += uint32_t(p[n - 1]) << 8;
  return acc;
}

uint16_t fold(uint64_t acc) {
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return static_cast<uint16_t>(acc);
}

void put16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

void put32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

void put_addr(uint8_t* p, u128 a, int bytes) {
  for (int i = bytes - 1; i >= 0; i--, a >>= 8) p[i] = uint8_t(a);
}

constexpr int PROTO_UDP = 17;
constexpr int PROTO_RAW = 253;
constexpr int SIGNATURE = 20;
constexpr uint64_t MAX_TIME_PS = (uint64_t(1) << 48) - 1;
}  // namespace

// ------------------------------------------------------------------------ a stream
bool StreamGen::plan(Planned& out) {
  if (done_) return false;
  if ((count_ >= 0 && static_cast<int64_t>(seq_) >= count_) || (has_end_ && t_ >= end_)) {
    done_ = true;
    return false;
  }
  int family = single_family_;
  if (mixed_) family = rng_.random() < v6_share_ ? 6 : 4;
  size_t choice;
  if (cum_weights_.empty()) {
    choice = seq_ % sizes_;
  } else {  // random.choices: bisect_right(cum_weights, random() * total, 0, n - 1)
    double x = rng_.random() * cum_weights_.back();
    choice = std::upper_bound(cum_weights_.begin(), cum_weights_.end() - 1, x) -
             cum_weights_.begin();
  }
  const Shape& shape = shapes_[family == 6][choice];
  if (!shape.error.empty()) throw std::invalid_argument(shape.error);
  Destinations& dest = dests_[family == 6];
  uint64_t k = drawn_[family == 6]++;
  u128 address;
  if (dest.fixed ? dest.addresses.empty() : dest.totals.empty())
    throw std::invalid_argument("stream " + std::to_string(id_) + ": no IPv" +
                                std::to_string(family) + " destinations to draw from");
  if (dest.fixed) {
    address = dest.addresses[k % dest.addresses.size()];
  } else {
    size_t index = k % dest.totals.size();
    if (dest.totals[index] == 0)
      throw std::invalid_argument("stream " + std::to_string(id_) + ": a destination prefix "
                                  "without addresses");
    u128 pick = rng_.below(dest.totals[index]);
    address = 0;
    for (size_t r = dest.offsets[index]; r < dest.offsets[index + 1]; r++) {
      u128 span = dest.his[r] - dest.los[r];
      if (pick <= span) {
        address = dest.los[r] + pick;
        break;
      }
      pick -= span + 1;
    }
  }
  out = Planned{t_, order_, static_cast<uint32_t>(seq_), family, &shape, address};
  if (__builtin_add_overflow(t_, shape.interval, &t_))
    throw std::overflow_error("tester: schedule overflows 128 bits");
  seq_++;
  if (seq_ > 0xFFFFFFFFULL)
    throw std::invalid_argument("stream " + std::to_string(id_) + ": more than 2**32 packets");
  return true;
}

// ------------------------------------------------------------------------ frame building
size_t StreamGen::build(const Planned& p, uint64_t time_ps, uint8_t* out) const {
  const Shape& s = *p.shape;
  size_t link = pos_ ? 4 : 14;
  uint8_t* ip = out + link;
  int header = p.family == 4 ? 20 : 40;
  bool udp = transport_ == 1 || (transport_ == 0 && s.ip_len >= header + 8 + SIGNATURE);
  int transport_len = s.ip_len - header;
  int payload_len = transport_len - (udp ? 8 : 0);
  // signature + filler
  uint8_t* payload = ip + header + (udp ? 8 : 0);
  std::memcpy(payload, "NPkT", 4);
  put16(payload + 4, id_);
  put32(payload + 6, p.seq);
  for (int i = 0; i < 6; i++) payload[10 + i] = uint8_t(time_ps >> (8 * (5 - i)));
  size_t start = (id_ * 31u + p.seq) & 0xFF;
  size_t fill = static_cast<size_t>(payload_len - SIGNATURE);
  std::memcpy(payload + SIGNATURE, filler_->data() + start, fill);
  uLong crc = crc32(crc32(0L, payload, 16), payload + SIGNATURE, static_cast<uInt>(fill));
  put32(payload + 16, static_cast<uint32_t>(crc));
  int protocol = udp ? PROTO_UDP : PROTO_RAW;
  int bytes = p.family == 4 ? 4 : 16;
  u128 src = p.family == 4 ? src4_ : src6_;
  if (p.family == 4) {
    uint8_t* h = ip;
    h[0] = 0x45;
    h[1] = 0;
    put16(h + 2, s.ip_len);
    put16(h + 4, p.seq & 0xFFFF);
    put16(h + 6, 0);
    h[8] = 64;
    h[9] = uint8_t(protocol);
    put16(h + 10, 0);
    put_addr(h + 12, src, 4);
    put_addr(h + 16, p.dst, 4);
    put16(h + 10, static_cast<uint16_t>(~fold(sum16(h, 20)) & 0xFFFF));
  } else {
    uint8_t* h = ip;
    put32(h, 6u << 28);
    put16(h + 4, transport_len);
    h[6] = uint8_t(protocol);
    h[7] = 64;
    put_addr(h + 8, src, 16);
    put_addr(h + 24, p.dst, 16);
  }
  if (udp) {
    uint8_t* u = ip + header;
    put16(u, sport_);
    put16(u + 2, dport_);
    put16(u + 4, transport_len);
    put16(u + 6, 0);
    // pseudo-header (RFC 768 / RFC 8200 8.1): addresses, then the length and protocol
    uint64_t acc = sum16(ip + (p.family == 4 ? 12 : 8), size_t(bytes) * 2);
    acc += uint32_t(transport_len) + PROTO_UDP;
    if (p.family == 6) acc += uint32_t(transport_len) >> 16;
    acc += sum16(u, static_cast<size_t>(transport_len));
    uint16_t check = static_cast<uint16_t>(~fold(acc) & 0xFFFF);
    put16(u + 6, check ? check : 0xFFFF);
  }
  size_t length = link + static_cast<size_t>(s.ip_len);
  if (pos_) {
    out[0] = 0xFF;
    out[1] = 0x03;
    put16(out + 2, p.family == 4 ? 0x0021 : 0x0057);
    return length;
  }
  std::memcpy(out, dst_mac_.data(), 6);
  std::memcpy(out + 6, src_mac_.data(), 6);
  put16(out + 12, p.family == 4 ? 0x0800 : 0x86DD);
  if (length < 60) {
    std::memset(out + length, 0, 60 - length);
    length = 60;
  }
  uLong fcs = crc32(0L, out, static_cast<uInt>(length));
  for (int i = 0; i < 4; i++) out[length + i] = uint8_t(fcs >> (8 * i));
  return length + 4;
}

// ------------------------------------------------------------------------ a port
bool PortGen::next(Frame& frame) {
  // the streams' next packets, merged by (scheduled instant, stream order)
  if (!primed_) {
    heads_.resize(streams_.size());
    has_.resize(streams_.size());
    for (size_t i = 0; i < streams_.size(); i++) has_[i] = streams_[i].plan(heads_[i]);
    primed_ = true;
  }
  size_t best = streams_.size();
  for (size_t i = 0; i < streams_.size(); i++) {
    if (!has_[i]) continue;
    if (best == streams_.size() || heads_[i].ideal < heads_[best].ideal) best = i;
  }
  if (best == streams_.size()) return false;
  const Planned p = heads_[best];
  has_[best] = streams_[best].plan(heads_[best]);
  u128 start = p.ideal >= free_ ? p.ideal : free_;
  if (__builtin_add_overflow(start, p.shape->slot, &free_))
    throw std::overflow_error("tester: schedule overflows 128 bits");
  u128 ceil = start / denominator_ + (start % denominator_ ? 1 : 0);
  if (ceil > MAX_TIME_PS)
    throw std::invalid_argument("send time " + std::to_string(static_cast<uint64_t>(ceil)) +
                                " ps outside 0..2**48-1");
  frame.time_ps = static_cast<uint64_t>(ceil);
  frame.planned = p;
  frame.stream = &streams_[best];
  return true;
}

}  // namespace tester
