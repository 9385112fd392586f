// The offline GLM of a whole 4D series with the live GLM's kernels (`rtfmri glm`): the series streams through the
// device in chunks into DeviceGlm's compensated accumulators (AR(1) whitening across chunk borders), one solve, and
// the maps come back as images on the series' grid. docs/algorithms/glm.md.
#pragma once

#include <optional>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/device/device.hpp"
#include "core/glm/glm_model.hpp"
#include "core/image/image.hpp"

namespace rtf {

struct SeriesGlmResult {
  GlmModel model;
  Image beta;                   // one volume per design column
  Image sigma2;                 // residual variance
  std::vector<Image> contrast;  // per t contrast: its estimate c'beta
  std::vector<Image> t;         // per t contrast
  std::vector<Image> f;         // per F contrast
};

// `design` has one row per volume of `bold`. Volumes are uploaded `chunk` at a time. Throws std::invalid_argument
// for a design whose rows differ from the volumes, a mask of another size, or an AR(1) coefficient outside (-1, 1).
SeriesGlmResult fit_series_glm(Device& device, const Image& bold, const DesignMatrix& design,
                               const std::vector<GlmContrast>& contrasts, double ar1 = 0.0,
                               std::optional<std::vector<uint8_t>> mask = std::nullopt, int64_t chunk = 64);

}  // namespace rtf
