// The ME's own datapath units: CAM, CRC, mul_step; and the hash function of the shared hash
// unit (its command is in memory.cpp, like the other unit commands).
#include <algorithm>

#include "operands.hpp"

namespace npkit {
namespace {

using namespace isa;

void cam_touch(ME& m, uint8_t e) {  // make entry e the most recently used
  auto it = std::find(m.cam_lru.begin(), m.cam_lru.end(), e);
  m.cam_lru.erase(it);
  m.cam_lru.push_back(e);
}

uint8_t cam_entry(const ME& m, uint32_t v) { return static_cast<uint8_t>(v % m.cam.size()); }

}  // namespace

// cam_lookup[dest, tag]: hit -> state<<8 | 1<<7 | entry<<3 (entry becomes MRU);
// miss -> LRU entry<<3.  cam_write[entry, tag, state], cam_clear, cam_read_tag[dest, entry],
// cam_read_state[dest, entry] (state<<8), cam_write_state[entry, state].
Outcome exec_cam(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  switch (in.sub) {
    case cam_ops::CAM_LOOKUP: {
      uint32_t tag = chip.read(m, c, ci, in.b);
      uint32_t r = static_cast<uint32_t>(m.cam_lru.front()) << 3;
      for (size_t e = 0; e < m.cam.size(); ++e) {
        if (m.cam[e].valid && m.cam[e].tag == tag) {
          r = (static_cast<uint32_t>(m.cam[e].state) << 8) | (1u << 7) | (static_cast<uint32_t>(e) << 3);
          cam_touch(m, static_cast<uint8_t>(e));
          break;
        }
      }
      chip.write(m, c, ci, in.dest, r);
      break;
    }
    case cam_ops::CAM_WRITE: {
      uint8_t e = cam_entry(m, chip.read(m, c, ci, in.dest));
      m.cam[e] = ME::CamEntry{chip.read(m, c, ci, in.b), in.aux, true};
      cam_touch(m, e);
      break;
    }
    case cam_ops::CAM_CLEAR:
      for (auto& e : m.cam) e = ME::CamEntry{};
      for (size_t e = 0; e < m.cam_lru.size(); ++e) m.cam_lru[e] = static_cast<uint8_t>(e);
      break;
    case cam_ops::CAM_READ_TAG:
      chip.write(m, c, ci, in.dest, m.cam[cam_entry(m, chip.read(m, c, ci, in.b))].tag);
      break;
    case cam_ops::CAM_READ_STATE:
      chip.write(m, c, ci, in.dest, static_cast<uint32_t>(m.cam[cam_entry(m, chip.read(m, c, ci, in.b))].state) << 8);
      break;
    default:  // CAM_WRITE_STATE
      m.cam[cam_entry(m, chip.read(m, c, ci, in.dest))].state = in.aux;
      break;
  }
  return Outcome::Next;
}

// One byte into a CRC remainder.  crc_32 and crc_iscsi are the reflected (LSB-first) forms
// with polynomials 0xEDB88320 and 0x82F63B78; crc_ccitt (0x1021, 16 bit), crc_10 (0x233)
// and crc_5 (0x05) are MSB-first.  No pre/post inversion: software initialises
// CRC_REMAINDER and complements the result as its protocol requires.
uint32_t crc_update(uint32_t kind, uint32_t rem, uint8_t byte) {
  switch (kind) {
    case crc_kinds::CRC_32: case crc_kinds::CRC_ISCSI: {
      uint32_t poly = kind == crc_kinds::CRC_32 ? 0xEDB88320u : 0x82F63B78u;
      rem ^= byte;
      for (int i = 0; i < 8; ++i) rem = (rem >> 1) ^ ((rem & 1) ? poly : 0);
      return rem;
    }
    case crc_kinds::CRC_CCITT:
      rem = (rem & 0xFFFF) ^ (static_cast<uint32_t>(byte) << 8);
      for (int i = 0; i < 8; ++i) rem = ((rem << 1) ^ ((rem & 0x8000) ? 0x1021 : 0)) & 0xFFFF;
      return rem;
    case crc_kinds::CRC_10:
      rem = (rem & 0x3FF) ^ (static_cast<uint32_t>(byte) << 2);
      for (int i = 0; i < 8; ++i) rem = ((rem << 1) ^ ((rem & 0x200) ? 0x233 : 0)) & 0x3FF;
      return rem;
    default: {  // CRC_5
      rem &= 0x1F;
      for (int i = 7; i >= 0; --i) {
        uint32_t feedback = ((rem >> 4) ^ (byte >> i)) & 1;
        rem = (rem << 1) & 0x1F;
        if (feedback) rem ^= 0x05;
      }
      return rem;
    }
  }
}

// crc_be/le[kind, dest, src]: dest = src; CRC_REMAINDER absorbs src's 4 bytes, most
// significant first (be) or least significant first (le).
Outcome exec_crc(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  uint32_t v = chip.read(m, c, ci, in.b);
  for (int i = 0; i < 4; ++i) {
    int shift = in.flag ? 8 * i : 24 - 8 * i;
    c.crc_remainder = crc_update(in.sub, c.crc_remainder, static_cast<uint8_t>(v >> shift));
  }
  chip.write(m, c, ci, in.dest, v);
  return Outcome::Next;
}

// mul_step: *_start latches a*b (operands masked to 24x8, 16x16 or 32x32 bits); the steps
// only take their cycle; *_last writes the low word, 32x32_last2 the high word.  Any other
// order is an illegal_instruction fault.
Outcome exec_mul_step(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  using namespace mul_steps;
  uint8_t s = in.sub;
  if (s == K24X8_START || s == K16X16_START || s == K32X32_START) {
    uint64_t a = chip.read(m, c, ci, in.a), b = chip.read(m, c, ci, in.b);
    if (s == K24X8_START) { a &= 0xFFFFFF; b &= 0xFF; }
    if (s == K16X16_START) { a &= 0xFFFF; b &= 0xFFFF; }
    c.mul_product = a * b;
    c.mul_next = static_cast<uint8_t>(s + 1);
    return Outcome::Next;
  }
  if (c.mul_next != s)
    fault("illegal_instruction", std::string("mul_step ") + NAMES[s] + " out of sequence (expected " +
          (c.mul_next < COUNT ? NAMES[c.mul_next] : "a *_start step") + ")");
  if (s == K24X8_LAST || s == K16X16_LAST || s == K32X32_LAST) {
    chip.write(m, c, ci, in.dest, static_cast<uint32_t>(c.mul_product));
    c.mul_next = s == K32X32_LAST ? K32X32_LAST2 : 0xFF;
  } else if (s == K32X32_LAST2) {
    chip.write(m, c, ci, in.dest, static_cast<uint32_t>(c.mul_product >> 32));
    c.mul_next = 0xFF;
  } else {
    c.mul_next = static_cast<uint8_t>(s + 1);
  }
  return Outcome::Next;
}

// The hash function: result = (key (x) multiplier) mod (x^W + polynomial) over GF(2),
// W = 48, 64 or 128.  Keys and results sit in the transfer registers most significant
// word first (48-bit keys: bits 47..32 in the low half of the first word).
void hash_key(const HashConfig& cfg, int size, uint32_t* w) {
  using u128 = unsigned __int128;
  int width = size == hash_sizes::HASH_48 ? 48 : size == hash_sizes::HASH_64 ? 64 : 128;
  u128 mask = width == 128 ? ~static_cast<u128>(0) : ((static_cast<u128>(1) << width) - 1);
  auto wide = [](const uint64_t v[2]) { return (static_cast<u128>(v[1]) << 64) | v[0]; };
  u128 poly = wide(cfg.polynomial[size]) & mask;
  u128 mult = wide(cfg.multiplier[size]) & mask;
  u128 key = 0;
  int words = width == 128 ? 4 : 2;
  for (int i = 0; i < words; ++i) key = (key << 32) | w[i];
  key &= mask;
  u128 r = 0;
  for (int bit = width - 1; bit >= 0; --bit) {
    bool top = (r >> (width - 1)) & 1;  // r * x mod G
    r = (r << 1) & mask;
    if (top) r ^= poly;
    if ((key >> bit) & 1) r ^= mult;
  }
  for (int i = words - 1; i >= 0; --i) {
    w[i] = static_cast<uint32_t>(r);
    r >>= 32;
  }
}

}  // namespace npkit
