// fit_series_glm: chunked upload and accumulation, whitened design rows, solve, read-back into images.
#include "core/glm/series_glm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/glm/device_glm.hpp"

namespace rtf {

namespace {

Image map_image(const ImageHeader& grid, int64_t volumes, const std::vector<float>& data, int64_t first_volume) {
  ImageHeader h = grid;
  h.num_volumes = volumes;
  h.source_type = DataType::kFloat32;
  const auto voxels = static_cast<size_t>(grid.voxels_per_volume());
  const auto begin = data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(first_volume) * voxels);
  return Image(h,
               std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(static_cast<size_t>(volumes) * voxels)));
}

}  // namespace

SeriesGlmResult fit_series_glm(Device& device, const Image& bold, const DesignMatrix& design,
                               const std::vector<GlmContrast>& contrasts, double ar1,
                               std::optional<std::vector<uint8_t>> mask, int64_t chunk) {
  const int64_t volumes = bold.nt(), voxels = bold.header().voxels_per_volume();
  if (design.x.rows() != volumes) {
    throw std::invalid_argument(
        fmt::format("GLM: the design has {} rows for a series of {} volumes", design.x.rows(), volumes));
  }
  if (!(std::abs(ar1) < 1.0)) throw std::invalid_argument(fmt::format("GLM: AR(1) coefficient {} not in (-1, 1)", ar1));
  chunk = std::clamp<int64_t>(chunk, 1, volumes);
  int constant = -1;
  for (size_t j = 0; j < design.columns.size(); ++j) {
    if (design.columns[j].kind == DesignColumn::Kind::kConstant) constant = static_cast<int>(j);
  }
  DeviceGlmSpec spec{voxels, static_cast<int>(design.x.cols()), contrasts, constant, chunk, std::move(mask)};
  DeviceGlm glm(device, spec);
  // Slots 0..chunk-1 hold the chunk; slot `chunk` keeps the previous chunk's last volume for AR(1) whitening.
  DeviceBuffer<float> staging(device, static_cast<size_t>((chunk + 1) * voxels));
  Eigen::MatrixXd whitened = design.x;
  if (ar1 != 0.0) {
    whitened.row(0) = std::sqrt(1.0 - ar1 * ar1) * design.x.row(0);
    for (int64_t t = 1; t < volumes; ++t) whitened.row(t) = design.x.row(t) - ar1 * design.x.row(t - 1);
  }
  std::vector<int64_t> slots, prev;
  for (int64_t start = 0; start < volumes; start += chunk) {
    const int64_t n = std::min(chunk, volumes - start);
    if (start > 0) {  // the previous chunk's last volume into slot `chunk`
      RTF_CL_CHECK(clEnqueueCopyBuffer(device.queue(), staging.get(), staging.get(),
                                       static_cast<size_t>((chunk - 1) * voxels) * sizeof(float),
                                       static_cast<size_t>(chunk * voxels) * sizeof(float),
                                       static_cast<size_t>(voxels) * sizeof(float), 0, nullptr, nullptr));
    }
    const auto first = bold.data().begin() + static_cast<std::ptrdiff_t>(start * voxels);
    staging.write(device.queue(), std::span<const float>(&*first, static_cast<size_t>(n * voxels)));
    if (start == 0) glm.reset(staging, 0);
    slots.clear();
    prev.clear();
    for (int64_t k = 0; k < n; ++k) {
      slots.push_back(k);
      prev.push_back(k > 0 ? k - 1 : (start > 0 ? chunk : -1));
    }
    glm.accumulate(staging, slots, prev, whitened.middleRows(start, n), ar1);
    // The next chunk overwrites the staging buffer: let this one finish with it first.
    RTF_CL_CHECK(clFinish(device.queue()));
  }
  SeriesGlmResult r;
  r.model = make_glm_model(whitened, contrasts);
  glm.solve(r.model);
  auto q = device.queue();
  const ImageHeader& grid = bold.header();
  r.beta = map_image(grid, design.x.cols(), glm.beta().read_all(q), 0);
  r.sigma2 = map_image(grid, 1, glm.sigma2().read_all(q), 0);
  const std::vector<float> con = glm.contrast().read_all(q), t = glm.t().read_all(q), f = glm.f().read_all(q);
  for (int k = 0; k < glm.t_contrasts(); ++k) {
    r.contrast.push_back(map_image(grid, 1, con, k));
    r.t.push_back(map_image(grid, 1, t, k));
  }
  for (int k = 0; k < glm.f_contrasts(); ++k) r.f.push_back(map_image(grid, 1, f, k));
  return r;
}

}  // namespace rtf
