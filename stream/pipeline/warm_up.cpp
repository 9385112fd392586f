// Warm-up: grid specs, synthetic volumes, a scratch RunPipeline.
#include "stream/pipeline/warm_up.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>
#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "stream/pipeline/run_pipeline.hpp"

namespace rtf::stream {

namespace {

const std::regex kGridSpec(R"(^(\d+)x(\d+)x(\d+)@([0-9.]+)(?:x([0-9.]+)x([0-9.]+))?$)");

// An int16 volume with a head-like shape (a soft-edged ellipsoid) and texture, so that every stage has something to
// work on (the brain mask finds tissue, registration finds gradients). `variant` changes the texture slightly.
std::vector<std::byte> synthetic_volume(const ImageHeader& grid, int variant) {
  const auto [nx, ny, nz] = grid.dims;
  std::vector<int16_t> v(static_cast<size_t>(grid.voxels_per_volume()));
  size_t i = 0;
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x, ++i) {
        const double u = (2.0 * static_cast<double>(x) + 1.0) / static_cast<double>(nx) - 1.0;
        const double w = (2.0 * static_cast<double>(y) + 1.0) / static_cast<double>(ny) - 1.0;
        const double t = (2.0 * static_cast<double>(z) + 1.0) / static_cast<double>(nz) - 1.0;
        const double r = std::sqrt(u * u + w * w + t * t) / 0.8;
        const double inside = 1.0 / (1.0 + std::exp((r - 1.0) * 12.0));
        const double texture = 1.0 + 0.2 * std::sin(9.0 * u + variant * 0.05) * std::cos(7.0 * w) * std::sin(5.0 * t);
        v[i] = static_cast<int16_t>(std::lround(1000.0 * inside * texture));
      }
    }
  }
  std::vector<std::byte> bytes(v.size() * sizeof(int16_t));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// A scratch directory, removed with its contents when it goes out of scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rtfmri-warm-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("warm-up: cannot create a scratch directory");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

bool is_grid_spec(const std::string& spec) {
  return std::regex_match(spec, kGridSpec);
}

ImageHeader warm_grid(const std::string& spec) {
  std::smatch m;
  if (std::regex_match(spec, m, kGridSpec)) {
    ImageHeader h;
    for (int a = 0; a < 3; ++a) h.dims[static_cast<size_t>(a)] = std::stoll(m[a + 1].str());
    h.voxel_mm.fill(std::stod(m[4].str()));
    if (m[5].matched) h.voxel_mm = {std::stod(m[4].str()), std::stod(m[5].str()), std::stod(m[6].str())};
    for (size_t a = 0; a < 3; ++a) {
      if (h.dims[a] < 2 || h.dims[a] > 4096 || !(h.voxel_mm[a] > 0.0) || h.voxel_mm[a] > 100.0) {
        throw std::invalid_argument(fmt::format("warm: '{}': dims 2..4096 and voxel sizes in (0, 100] mm", spec));
      }
      h.affine(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(a)) = h.voxel_mm[a];
      h.affine(static_cast<Eigen::Index>(a), 3) = -0.5 * static_cast<double>(h.dims[a] - 1) * h.voxel_mm[a];
    }
    return h;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(spec, ec)) {
    throw std::invalid_argument(
        fmt::format("warm: '{}' is neither a grid (e.g. 64x64x33@3 or 64x64x33@3x3x3.5) nor a NIfTI file", spec));
  }
  try {
    ImageHeader h = read_nifti_header(spec);
    h.num_volumes = 1;
    return h;
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("warm: '{}': {}", spec, e.what()));
  }
}

WarmUpReport warm_up(Device& device, const PipelineConfig& config, const ImageHeader& grid_in) {
  const auto start = std::chrono::steady_clock::now();
  const ProgramCacheStats before = device.programs().stats();
  ImageHeader grid = grid_in;
  grid.num_volumes = 1;
  grid.source_type = DataType::kFloat32;
  if (!(grid.tr_s > 0)) grid.tr_s = config.tr_s > 0 ? config.tr_s : 1.0;
  PipelineConfig c = config;
  c.results_pub.clear();
  c.feedback_tcp.clear();
  c.feedback_udp.clear();
  if (c.volumes > 0) c.volumes = std::max<int64_t>(c.volumes, 2);
  if (!c.decoder_model.empty()) {
    // The decoder's kernel depends on its model only (voxel count, decision functions), not on where the grid lies:
    // on the model's dims the warm-up takes the model's affine (a grid spec's is centred on the origin), else leaves
    // the decoder to the run's start.
    const DecoderModelFile model = read_decoder_model(c.decoder_model);
    if (model.dims == grid.dims) {
      grid.affine = model.affine;
    } else {
      spdlog::info("warm-up: the decoder's model is for {}x{}x{} voxels: its kernel is built at a run's start",
                   model.dims[0], model.dims[1], model.dims[2]);
      c.decoder_model.clear();
      c.decoder_feedback.clear();
    }
  }
  WarmUpReport report;
  {
    ScratchDir scratch;
    RunPipeline run(device, c, grid, "warm-up", scratch.path() / "runs" / "warm-up");
    for (const std::string& s : run.active_stages()) report.stages += (report.stages.empty() ? "" : ", ") + s;
    for (int64_t index = 0; index < 2; ++index) {
      const std::vector<std::byte> payload = synthetic_volume(grid, static_cast<int>(index));
      run.upload(index, payload, DataType::kInt16);
      TrResult r = run.process(index);
      run.read_maps(r);
      for (const std::string& e : r.stage_errors) spdlog::warn("warm-up: {}", e);
    }
    run.finish();
    device.finish();
  }
  const ProgramCacheStats after = device.programs().stats();
  report.compiled = after.compiles - before.compiles;
  report.from_disk_cache = after.disk_hits - before.disk_hits;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace rtf::stream
