// Device opening and grid checks for subcommands.
#include "cli/cli_support.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/io/nifti_io.hpp"

namespace rtf::cli {

std::unique_ptr<Device> open_device(const GlobalOptions& globals) {
  auto device = Device::open(globals.device);
  spdlog::info("device: {} [{}]", device->info().label(), device->info().type_name());
  return device;
}

void require_same_grid(const ImageHeader& ref, const std::string& ref_name, const ImageHeader& other,
                       const std::string& other_name) {
  if (ref.dims != other.dims) {
    throw std::invalid_argument(fmt::format("{} is {}x{}x{} but {} is {}x{}x{}: they must share one voxel grid",
                                            other_name, other.dims[0], other.dims[1], other.dims[2], ref_name,
                                            ref.dims[0], ref.dims[1], ref.dims[2]));
  }
  if (!ref.same_grid(other, 1e-3)) {
    throw std::invalid_argument(
        fmt::format("{} and {} have the same dimensions but different affines (voxel-to-world)", other_name, ref_name));
  }
}

}  // namespace rtf::cli

namespace rtf::cli {

CLI::App& sim_group(CLI::App& app) {
  for (CLI::App* existing : app.get_subcommands({})) {
    if (existing->get_name() == "sim") return *existing;
  }
  auto* sim = app.add_subcommand("sim", "Scanner simulator: replay a 4D NIfTI to a server, or make a phantom");
  sim->require_subcommand(1);
  return *sim;
}

void write_voxel_values(const std::string& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                        const std::vector<double>& values) {
  if (voxels.size() != values.size()) throw std::logic_error("write_voxel_values: sizes differ");
  ImageHeader h = grid;
  h.num_volumes = 1;
  h.tr_s = 0.0;
  h.source_type = DataType::kFloat32;
  Image image(h, 0.0f);
  for (size_t k = 0; k < voxels.size(); ++k)
    image.data()[static_cast<size_t>(voxels[k])] = static_cast<float>(values[k]);
  write_nifti(path, image);
}

void ProgressLog::operator()(int64_t done, int64_t total) {
  const double s = clock_.seconds();
  if ((s - last_ < every_ && done < total) || done <= 0) return;
  last_ = s;
  spdlog::info("{} {}/{}, {:.1f} s, about {:.0f} s left", what_, done, total, s,
               s / static_cast<double>(done) * static_cast<double>(total - done));
}

}  // namespace rtf::cli
