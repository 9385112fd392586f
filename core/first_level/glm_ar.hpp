// `rtfmri glm --noise arP [--permutations N]` (core/first_level/glm_command.hpp): the AR(P) GLM of the (optionally
// smoothed) series, then the first-level permutation test; every file written together (docs/algorithms/glm_ar.md).
#pragma once

#include <cstdint>
#include <vector>

#include "core/design/contrast.hpp"
#include "core/design/design_matrix.hpp"
#include "core/device/device.hpp"
#include "core/first_level/glm_command.hpp"
#include "core/glm/glm_model.hpp"
#include "core/image/image.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

// `tr_s`: the design's TR (the report's); `clock`: the command's (the report's seconds).
void run_ar_glm(const GlmOptions& options, Device& device, const Image& bold, const DesignMatrix& design, double tr_s,
                const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask, const Stopwatch& clock);

}  // namespace rtf
