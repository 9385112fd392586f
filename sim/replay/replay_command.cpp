// `rtfmri sim replay`'s work (sim/replay/replay_command.hpp).
#include "sim/replay/replay_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "sim/replay/feedback_lockstep.hpp"

namespace rtf::sim {

void run_replay_command(const ReplayCommandOptions& c) {
  ReplayOptions options = c.options;
  if (c.corrupt_target == "header") options.faults.corrupt_target = CorruptTarget::kHeader;
  if (c.corrupt_target == "payload") options.faults.corrupt_target = CorruptTarget::kPayload;
  const Image image = read_nifti(c.file);
  std::unique_ptr<FeedbackLockstep> lockstep;
  if (!c.lockstep.empty()) {
    lockstep = std::make_unique<FeedbackLockstep>(c.lockstep, options.lockstep_timeout_s);
    options.handled = [&lockstep, run = options.run](int64_t previous) { return lockstep->finished(run, previous); };
  }
  zmq::context_t context(1);
  const ReplayReport r = replay(image, options, context);
  const auto& s = r.stats;
  fmt::print(
      "replay: {} volumes in {:.2f} s; {} transmissions ({} resends), {} acknowledged, {} duplicate ACKs, {} NACKs, "
      "{} unmatched replies, {} reconnects\n",
      r.volumes, r.seconds, s.transmissions, s.resends, s.acked, s.duplicate_acks, s.nacks, s.unmatched, s.reconnects);
  for (const auto& [code, n] : s.nacks_by_code) fmt::print("  NACK {}: {}\n", code, n);
  fmt::print("run {}/{}: {}\n", options.session, options.run,
             r.run_closed ? "closed (END_OF_RUN acknowledged)" : (options.end_run ? "NOT closed" : "left open"));
  for (const auto& f : r.failures) fmt::print(stderr, "  failed: {}\n", f);
  if (!r.ok()) throw std::runtime_error(fmt::format("{} volumes or messages were not delivered", r.failures.size()));
}

}  // namespace rtf::sim
