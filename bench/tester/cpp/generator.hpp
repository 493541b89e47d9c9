// The tester's generator in C++: a port's streams, planned and built frame by frame
// (generator.cpp says how the results stay identical to bench/tester/generator.py).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tester {

using u128 = unsigned __int128;

// CPython's random.Random, continued from a state getstate() gave.
class PyMt {
 public:
  explicit PyMt(const std::vector<uint32_t>& state);
  uint32_t next();
  double random();
  u128 getrandbits(int k);
  u128 below(u128 n);

 private:
  std::array<uint32_t, 624> mt_{};
  int index_ = 0;
};

// What one (family, size choice) of a stream sends: its IP length, its interval to the
// stream's next packet and its slot on the line (both in 1/D ps), or the error to raise.
struct Shape {
  int ip_len = 0;
  u128 interval = 0;
  u128 slot = 0;
  std::string error;
};

// A family's destinations: a fixed address list used in turn, or per prefix the inclusive
// address ranges (offsets[i]..offsets[i+1]) and their total size.
struct Destinations {
  bool fixed = true;
  std::vector<u128> addresses;
  std::vector<u128> los, his, totals;
  std::vector<size_t> offsets;
};

struct Planned {
  u128 ideal = 0;
  int order = 0;
  uint32_t seq = 0;
  int family = 4;
  const Shape* shape = nullptr;
  u128 dst = 0;
};

class StreamGen;

struct Frame {
  uint64_t time_ps = 0;
  Planned planned;
  const StreamGen* stream = nullptr;
};

struct StreamSpec {
  int id = 0;
  std::vector<uint32_t> mt_state;
  bool mixed = false;
  int family = 4;
  double v6_share = 0.5;
  size_t sizes = 1;
  std::vector<double> cum_weights;  // empty: sizes in turn
  std::array<std::vector<Shape>, 2> shapes;  // [v4, v6][size choice]
  std::array<Destinations, 2> dests;
  u128 start = 0;
  bool has_end = false;
  u128 end = 0;
  int64_t count = -1;
  bool pos = false;
  int transport = 0;  // 0 auto, 1 udp, 2 raw
  int sport = 0, dport = 0;
  u128 src4 = 0, src6 = 0;
  std::array<uint8_t, 6> dst_mac{}, src_mac{};
};

class StreamGen {
 public:
  StreamGen(StreamSpec spec, int order, std::shared_ptr<const std::string> filler)
      : id_(static_cast<uint32_t>(spec.id)), order_(order), rng_(spec.mt_state),
        mixed_(spec.mixed), single_family_(spec.family), v6_share_(spec.v6_share),
        sizes_(spec.sizes), cum_weights_(std::move(spec.cum_weights)),
        shapes_(std::move(spec.shapes)), dests_(std::move(spec.dests)), t_(spec.start),
        has_end_(spec.has_end), end_(spec.end), count_(spec.count), pos_(spec.pos),
        transport_(spec.transport), sport_(static_cast<uint32_t>(spec.sport)),
        dport_(static_cast<uint32_t>(spec.dport)), src4_(spec.src4), src6_(spec.src6),
        dst_mac_(spec.dst_mac), src_mac_(spec.src_mac), filler_(std::move(filler)) {}

  bool plan(Planned& out);
  size_t build(const Planned& p, uint64_t time_ps, uint8_t* out) const;
  uint32_t id() const { return id_; }

 private:
  uint32_t id_;
  int order_;
  PyMt rng_;
  bool mixed_;
  int single_family_;
  double v6_share_;
  size_t sizes_;
  std::vector<double> cum_weights_;
  std::array<std::vector<Shape>, 2> shapes_;
  std::array<Destinations, 2> dests_;
  std::array<uint64_t, 2> drawn_{};
  u128 t_;
  bool has_end_;
  u128 end_;
  int64_t count_;
  bool pos_;
  int transport_;
  uint32_t sport_, dport_;
  u128 src4_, src6_;
  std::array<uint8_t, 6> dst_mac_, src_mac_;
  std::shared_ptr<const std::string> filler_;
  uint64_t seq_ = 0;
  bool done_ = false;
};

// A port's transmitter: the streams' packets in scheduled order, back to back when busy.
class PortGen {
 public:
  PortGen(u128 denominator, std::vector<StreamGen> streams)
      : denominator_(denominator), streams_(std::move(streams)) {}
  bool next(Frame& frame);

 private:
  u128 denominator_;
  std::vector<StreamGen> streams_;
  std::vector<Planned> heads_;
  std::vector<char> has_;
  bool primed_ = false;
  u128 free_ = 0;
};

}  // namespace tester
