// `rtfmri apply`'s work (core/registration/apply_command.hpp).
#include "core/registration/apply_command.hpp"

#include <spdlog/spdlog.h>

#include <functional>

#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/registration/resample.hpp"
#include "core/registration/transform_files.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

void run_apply_command(const ApplyCommandOptions& args, const DeviceOpener& open_device) {
  Stopwatch clock;
  std::vector<SpatialTransform> chain;
  for (const std::string& t : args.transforms) chain.push_back(read_transform_spec(t));
  const Image input = read_nifti(args.input);
  // Its voxels are not used, but a reference cut short is a file gone wrong: refused, never taken for its header.
  const ImageHeader reference = read_complete_nifti_header(args.reference);
  const auto interp = *parse_resample_interpolation(args.interp);
  auto device = open_device();
  // Progress with the time left, at most every 2 s (a long 4D run on a CPU device takes a while).
  ProgressLog progress("volume", 2.0);
  const Image out = resample(*device, input, reference, chain, interp, args.default_value, std::ref(progress));
  // Nearest keeps the input's datatype (labels stay integers); interpolated values are float32.
  const DataType type = interp == ResampleInterpolation::kNearest ? input.header().source_type : DataType::kFloat32;
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(args.out), out, type);
  outputs.commit();
  spdlog::info("resampled {} ({} volume(s)) onto {} ({}x{}x{}) through {} transform(s), {} -> {} ({:.2f} s)",
               args.input, input.nt(), args.reference, reference.dims[0], reference.dims[1], reference.dims[2],
               chain.size(), args.interp, args.out, clock.seconds());
}

}  // namespace rtf
