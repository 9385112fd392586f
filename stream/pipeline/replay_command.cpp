// `rtfmri replay`'s work (stream/pipeline/replay_command.hpp).
#include "stream/pipeline/replay_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "core/util/stopwatch.hpp"
#include "stream/output/output_failures.hpp"
#include "stream/pipeline/session_replay.hpp"

namespace rtf::stream {

void run_replay_command(const ReplayCommandOptions& o, const DeviceOpener& open_device) {
  const Stopwatch clock;
  PipelineConfig c = o.config;
  const std::filesystem::path out =
      o.out.empty() ? std::filesystem::path(o.session_dir) / "replay" : std::filesystem::path(o.out);
  c.session_dir = out.string();
  validate(c);
  auto device = open_device();
  zmq::context_t context(1);
  LiveOutputs outputs(context, c);
  const auto runs = replay_session(*device, c, o.session_dir, out, &outputs, o.runs);
  outputs.stop();
  for (const ReplayedRun& r : runs) {
    fmt::print("replay: run {}: {} volumes in {:.2f} s ({:.1f} ms per volume){}\n", r.run, r.volumes, r.seconds,
               r.volumes > 0 ? 1e3 * r.seconds / static_cast<double>(r.volumes) : 0.0,
               r.corrupt > 0 ? fmt::format(", {} corrupt volumes left out", r.corrupt) : "");
  }
  const std::vector<std::string> lost = output_failures().lines(out);
  if (!lost.empty()) {
    for (const std::string& line : lost) fmt::print("replay: not written: {}\n", line);
    throw std::runtime_error(
        fmt::format("replay: {} of the outputs in {} not written whole (listed above)", lost.size(), out.string()));
  }
  fmt::print("replay: wrote {} ({:.2f} s)\n", out.string(), clock.seconds());
}

}  // namespace rtf::stream
