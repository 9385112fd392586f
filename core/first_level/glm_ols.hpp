// `rtfmri glm` without --noise arP or --bayes (core/first_level/glm_command.hpp): the OLS (or fixed AR(1)) GLM of the
// series and its files, written together (docs/algorithms/glm.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/device/device.hpp"
#include "core/first_level/glm_command.hpp"
#include "core/glm/glm_model.hpp"
#include "core/image/image.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

void run_ols_glm(const GlmOptions& options, Device& device, const Image& bold, const DesignMatrix& design, double tr_s,
                 const std::vector<GlmContrast>& contrasts, const std::optional<std::vector<uint8_t>>& mask,
                 const Stopwatch& clock);

}  // namespace rtf
