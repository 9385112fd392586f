// `rtfmri slicetime`'s work (core/temporal/slicetime_command.hpp).
#include "core/temporal/slicetime_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/temporal/slice_order.hpp"
#include "core/temporal/slice_timing.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

void run_slicetime_command(const SlicetimeCommandOptions& o, const DeviceOpener& open_device) {
  Stopwatch clock;
  if (o.order.has_value() == o.slice_timing_file.has_value()) {
    throw std::invalid_argument("slicetime: give exactly one of --order or --slice-timing");
  }
  SliceTimingSpec spec;
  spec.method = parse_interpolation(o.method);
  spec.sinc_half_width = o.sinc_half_width;
  const SliceOrder order = o.order ? parse_slice_order(*o.order) : SliceOrder::kAscending;
  const Image image = read_nifti(o.in);
  spec.tr_s = o.tr_s ? *o.tr_s : image.header().tr_s;
  if (!o.tr_s && !(spec.tr_s > 0.0)) {
    throw std::invalid_argument(fmt::format("slicetime: {} has no TR in its header; give --tr SECONDS", o.in));
  }
  const int nz = static_cast<int>(image.nz());
  spec.slice_times_s = o.order ? slice_times(order, nz, spec.tr_s) : read_slice_timing(*o.slice_timing_file);
  if (o.ref_slice) spec.ref_slice = *o.ref_slice;
  if (o.ref_time_s) spec.ref_time_s = *o.ref_time_s;

  auto device = open_device();
  SliceTimingCorrector corrector(*device, image.header().dims, image.nt(), spec);
  Image result = corrector.correct(image);
  result.header().tr_s = spec.tr_s;
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(o.out), result);
  outputs.commit();
  spdlog::info(
      "slice-timing corrected {} volume(s) of {}x{}x{} (TR {:.6g} s, {} interpolation, reference time {:.4f} s) "
      "-> {} ({:.2f} s)",
      image.nt(), image.nx(), image.ny(), image.nz(), spec.tr_s, to_string(spec.method), corrector.reference_time_s(),
      o.out, clock.seconds());
}

}  // namespace rtf
