// Chip snapshots: copy the whole simulated state out and back (chip.hpp, ChipSnapshot;
// docs/sim-core.md, "Snapshot and restore").
#include <stdexcept>

#include "chip.hpp"

namespace npkit {

size_t ChipSnapshot::held_bytes() const {
  size_t n = 0;
  for (const auto& image : sram_mem) n += image->held_bytes();
  n += dram_mem->held_bytes() + scratch_mem->held_bytes();
  for (const ME& m : mes_) n += m.code.size() * sizeof(Insn) + m.lm.size * sizeof(uint32_t);
  n += event_pool_.size() * sizeof(Event);
  return n;
}

std::shared_ptr<const ChipSnapshot> Chip::snapshot() {
  auto snap = std::make_shared<ChipSnapshot>();
  snap->owner = this;
#define NPKIT_SNAPSHOT_TAKE(member) snap->member = member;
  NPKIT_CHIP_VALUE_STATE(NPKIT_SNAPSHOT_TAKE)
#undef NPKIT_SNAPSHOT_TAKE
  for (auto& mem : sram_mem_) snap->sram_mem.push_back(mem.host.capture());
  snap->dram_mem = dram_mem_.host.capture();
  snap->scratch_mem = scratch_mem_.host.capture();
  snap->media = std::make_unique<Media>(*media_);  // its host is this chip
  return snap;
}

void Chip::restore(const ChipSnapshot& snap) {
  // The media copy calls back into the chip it was taken from, so a snapshot only goes back
  // into that chip (the same object: same configuration, same memory sizes).
  if (snap.owner != this || snap.mes_.size() != mes_.size() ||
      snap.sram_mem.size() != sram_mem_.size())
    throw std::invalid_argument("restore: the snapshot was taken of another chip");
#define NPKIT_SNAPSHOT_PUT(member) member = snap.member;
  NPKIT_CHIP_VALUE_STATE(NPKIT_SNAPSHOT_PUT)
#undef NPKIT_SNAPSHOT_PUT
  loaded_.clear();
  for (ME& m : mes_)
    if (loaded_pos_[m.index] >= 0) loaded_.push_back(&m);  // loaded_pos_ follows index order
  for (size_t i = 0; i < sram_mem_.size(); ++i) sram_mem_[i].host.restore(*snap.sram_mem[i]);
  dram_mem_.host.restore(*snap.dram_mem);
  scratch_mem_.host.restore(*snap.scratch_mem);
  media_ = std::make_unique<Media>(*snap.media);
  media_->set_frame_log(frame_log_.get());  // the copy holds the pointer of its time
}

}  // namespace npkit
