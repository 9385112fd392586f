// `rtfmri detrend`'s work (core/temporal/detrend_command.hpp).
#include "core/temporal/detrend_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/temporal/detrend.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

void run_detrend_command(const DetrendCommandOptions& o, const DeviceOpener& open_device) {
  Stopwatch clock;
  const DetrendSpec& spec = o.spec;
  if (!spec.poly_order && !spec.highpass_cutoff_s) {
    throw std::invalid_argument("detrend: give --poly N, --highpass SECONDS, or both");
  }
  const Image image = read_nifti(o.in);
  const double tr_s = o.tr_s ? *o.tr_s : image.header().tr_s;
  if (spec.highpass_cutoff_s && !o.tr_s && !(tr_s > 0.0)) {
    throw std::invalid_argument(fmt::format("detrend: {} has no TR in its header; give --tr SECONDS", o.in));
  }
  auto device = open_device();
  Detrender detrender(*device, image.header().voxels_per_volume(), image.nt(), tr_s, spec);
  Image result = detrender.detrend(image);
  if (tr_s > 0.0) result.header().tr_s = tr_s;
  io::OutputSet outputs;  // removed, not left half-written, on a failure or Ctrl-C
  write_nifti(outputs.add(o.out), result);
  outputs.commit();
  spdlog::info("detrended {} volume(s) of {}x{}x{} ({} basis functions, mean {}) -> {} ({:.2f} s)", image.nt(),
               image.nx(), image.ny(), image.nz(), detrender.design().cols(), spec.remove_mean ? "removed" : "kept",
               o.out, clock.seconds());
}

}  // namespace rtf
