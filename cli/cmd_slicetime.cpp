// `rtfmri slicetime IN OUT`: slice-timing correction of a 4D NIfTI series on the device
// (core/temporal/slice_timing.hpp; docs/algorithms/slice_timing.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

#include "cli/cli_support.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/temporal/slice_order.hpp"
#include "core/temporal/slice_timing.hpp"

namespace {

struct Options {
  std::string in, out;
  double tr_s = 0.0;
  std::string order;
  std::string slice_timing_file;
  int ref_slice = 0;
  double ref_time_s = 0.0;
  std::string method = "sinc";
  int sinc_half_width = 8;
};

void run(const Options& o, const CLI::App& cmd, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  const bool has_order = cmd.count("--order") > 0;
  const bool has_file = cmd.count("--slice-timing") > 0;
  if (has_order == has_file) throw std::invalid_argument("slicetime: give exactly one of --order or --slice-timing");

  rtf::SliceTimingSpec spec;
  spec.method = rtf::parse_interpolation(o.method);
  spec.sinc_half_width = o.sinc_half_width;
  const rtf::SliceOrder order = has_order ? rtf::parse_slice_order(o.order) : rtf::SliceOrder::kAscending;
  const rtf::Image image = rtf::read_nifti(o.in);
  const bool has_tr = cmd.count("--tr") > 0;
  spec.tr_s = has_tr ? o.tr_s : image.header().tr_s;
  if (!has_tr && !(spec.tr_s > 0.0)) {
    throw std::invalid_argument(fmt::format("slicetime: {} has no TR in its header; give --tr SECONDS", o.in));
  }
  const int nz = static_cast<int>(image.nz());
  spec.slice_times_s = has_order ? rtf::slice_times(order, nz, spec.tr_s) : rtf::read_slice_timing(o.slice_timing_file);
  if (cmd.count("--ref-slice") > 0) spec.ref_slice = o.ref_slice;
  if (cmd.count("--ref-time") > 0) spec.ref_time_s = o.ref_time_s;

  auto device = rtf::cli::open_device(globals);
  rtf::SliceTimingCorrector corrector(*device, image.header().dims, image.nt(), spec);
  rtf::Image result = corrector.correct(image);
  result.header().tr_s = spec.tr_s;
  rtf::io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  rtf::write_nifti(outputs.add(o.out), result);
  outputs.commit();
  spdlog::info(
      "slice-timing corrected {} volume(s) of {}x{}x{} (TR {:.6g} s, {} interpolation, reference time {:.4f} s) "
      "-> {} ({:.2f} s)",
      image.nt(), image.nx(), image.ny(), image.nz(), spec.tr_s, rtf::to_string(spec.method),
      corrector.reference_time_s(), o.out, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("slicetime", "Slice-timing correction: resample every slice to a reference time");
  cmd->add_option("IN", opts->in, "Input 4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("OUT", opts->out, "Output NIfTI (float32)")->required();
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
  cmd->add_option("--method", opts->method, "Interpolation: sinc (Hann-windowed), cubic (Catmull-Rom) or linear")
      ->capture_default_str();
  cmd->add_option("--sinc-half-width", opts->sinc_half_width, "Half-width of the sinc window in volumes")
      ->capture_default_str();
  cmd->callback([opts, cmd, &globals] { run(*opts, *cmd, globals); });
}

RTF_REGISTER_COMMAND(40, setup);

}  // namespace
