// randomise's outputs, written by rank 0 once every contrast is done (core/permutation/randomise.hpp): per contrast
// PREFIX_tstatK / fstatK and the p maps and null distributions asked for, then PREFIX_randomise.json.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/io/output_set.hpp"
#include "core/permutation/randomise_contrast.hpp"

namespace rtf {

// Contrast k's files into `outputs`; returns its entry of the JSON report.
nlohmann::json write_contrast_outputs(io::OutputSet& outputs, const RandomiseOptions& options,
                                      const RandomiseInputs& in, const ContrastResult& result,
                                      SlotStatistics& statistics, size_t k);

}  // namespace rtf
