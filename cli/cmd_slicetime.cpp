// `rtfmri slicetime IN OUT`: slice-timing correction of a 4D NIfTI series on the device
// (core/temporal/slice_timing.hpp; docs/algorithms/slice_timing.md).
#include <memory>

#include "cli/command_support.hpp"
#include "core/temporal/slicetime_command.hpp"

namespace {

// The options as CLI11 fills them; those not given stay unset in the command's options.
struct SlicetimeCli {
  rtf::SlicetimeCommandOptions command;
  double tr_s = 0.0;
  std::string order, slice_timing_file;
  int ref_slice = 0;
  double ref_time_s = 0.0;
};

template <typename T>
std::optional<T> if_given(const CLI::App& cmd, const char* name, const T& value) {
  return cmd.count(name) > 0 ? std::optional<T>(value) : std::nullopt;
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto opts = std::make_shared<SlicetimeCli>();
  auto* cmd = app.add_subcommand("slicetime", "Slice-timing correction: resample every slice to a reference time");
  cmd->add_option("IN", opts->command.in, "Input 4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", opts->command.out, "Output NIfTI (float32)")->required();
  cmd->add_option("--tr", opts->tr_s, "Repetition time in seconds (default: from the header)");
  auto* order = cmd->add_option("--order", opts->order,
                                "Slice order: ascending, descending, interleaved (0,2,4,...,1,3,...) or "
                                "interleaved-siemens (even slice counts start with slice 1)");
  auto* file = cmd->add_option("--slice-timing", opts->slice_timing_file,
                               "BIDS sidecar (.json, key SliceTiming) or text file of slice times in seconds")
                   ->check(CLI::ExistingFile);
  order->excludes(file);
  auto* ref_slice = cmd->add_option("--ref-slice", opts->ref_slice,
                                    "Reference slice (0-based; default: the slice acquired at position n/2)");
  auto* ref_time = cmd->add_option("--ref-time", opts->ref_time_s, "Reference time in seconds within the TR");
  ref_slice->excludes(ref_time);
  cmd->add_option("--method", opts->command.method,
                  "Interpolation: sinc (Hann-windowed), cubic (Catmull-Rom) or linear")
      ->capture_default_str();
  cmd->add_option("--sinc-half-width", opts->command.sinc_half_width, "Half-width of the sinc window in volumes")
      ->capture_default_str();
  cmd->callback([opts, cmd, &globals] {
    rtf::SlicetimeCommandOptions& o = opts->command;
    o.tr_s = if_given(*cmd, "--tr", opts->tr_s);
    o.order = if_given(*cmd, "--order", opts->order);
    o.slice_timing_file = if_given(*cmd, "--slice-timing", opts->slice_timing_file);
    o.ref_slice = if_given(*cmd, "--ref-slice", opts->ref_slice);
    o.ref_time_s = if_given(*cmd, "--ref-time", opts->ref_time_s);
    rtf::run_slicetime_command(o, [&globals] { return rtf::cli::open_device(globals); });
  });
}

RTF_REGISTER_COMMAND(40, setup);

}  // namespace
