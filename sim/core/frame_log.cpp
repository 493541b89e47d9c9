// Attaching the per-frame event log and its trace points (frame_log.hpp).
#include "chip.hpp"

namespace npkit {

void Chip::enable_frame_log(const FrameLogConfig& log_cfg) {
  if (log_cfg.bucket_shift < 0 || log_cfg.bucket_shift > 40 || log_cfg.sample_every < 1)
    throw std::invalid_argument("frame log: bucket_shift must be 0..40 and sample_every >= 1");
  const int eb = cfg_.media.element_bytes;
  set_frame_log(std::make_unique<FrameLog>(log_cfg, cfg_.num_mes(), cfg_.sram_channels, cfg_.dram_channels,
                                           cfg_.media.rbuf_bytes / eb, cfg_.media.tbuf_bytes / eb));
}

void Chip::set_frame_log(std::unique_ptr<FrameLog> log) {
  clear_trace_points();
  frame_log_ = std::move(log);
  media_->set_frame_log(frame_log_.get());
}

void Chip::set_trace_points(int me_index, const std::vector<uint32_t>& pcs) {
  if (!frame_log_) throw std::invalid_argument("set_trace_points: no frame log is attached");
  ME& m = mes_.at(static_cast<size_t>(me_index));
  for (uint32_t pc : pcs) {
    if (pc >= m.image_words)
      throw std::invalid_argument("set_trace_points: pc " + std::to_string(pc) + " is outside ME " +
                                  std::to_string(me_index) + "'s image");
    Insn& in = m.code[pc];
    if (in.handler == H_TRACE_POINT) continue;
    trace_originals_[(static_cast<uint64_t>(me_index) << 32) | pc] = in.handler;
    in.handler = H_TRACE_POINT;
  }
}

void Chip::clear_trace_points() {
  for (const auto& [key, handler] : trace_originals_) {
    ME& m = mes_[static_cast<size_t>(key >> 32)];
    Insn& in = m.code[static_cast<size_t>(key & 0xFFFFFFFFu)];
    if (in.handler == H_TRACE_POINT) in.handler = handler;
  }
}

// The instruction's own semantics, then (unless it stalled and will be retried) the log.
Outcome exec_trace_point(Chip& chip, ME& m, Context& c, int ci, const Insn& in) {
  const uint32_t pc = c.pc - 1;  // the dispatch loop has moved the PC on already
  const Outcome o = handler_at(chip.trace_original(m.index, pc))(chip, m, c, ci, in);
  if (o != Outcome::Stall)
    if (FrameLog* log = chip.frame_log()) log->trace_point(m.index, ci, pc, m.time);
  return o;
}

}  // namespace npkit
