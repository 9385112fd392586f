// The decoder model file ("format": "rtfmri-decoder", version 1; docs/algorithms/decoding.md has every key): what
// `rtfmri decode` writes as PREFIX_model.json, examples/export_sklearn_decoder.py writes from scikit-learn, and the
// live decoder reads. Reading checks everything a live run relies on and names the key and the problem.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/decoding/linear_model.hpp"
#include "core/image/image.hpp"

namespace rtf {

enum class FeatureScaling {
  kPerRun,        // z-scored over the run (offline: the whole run; live: the run so far)
  kNone,          // detrended only
  kFeatureScale,  // (x - feature_mean) / feature_scale, fixed (a StandardScaler's)
};

struct DecoderModelFile {
  DecoderModel model = DecoderModel::kLogistic;
  std::vector<std::string> classes;  // sorted; M = 1 decision function for two, else one per class
  std::array<int64_t, 3> dims{};     // the grid the mask lives on
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();
  std::vector<int> voxels;    // the p feature voxels, flat indices (x fastest), ascending
  Eigen::MatrixXd coef;       // p x M
  Eigen::VectorXd intercept;  // M
  std::optional<int> detrend_poly_order = 1;
  std::optional<double> highpass_cutoff_s;
  FeatureScaling scaling = FeatureScaling::kPerRun;
  std::vector<double> feature_mean, feature_scale;  // p each, for kFeatureScale
  double lag_s = 4.0;
  std::string rest;
  nlohmann::json training = nlohmann::json::object();  // what the training reported (kept as written)
  int64_t features() const { return static_cast<int64_t>(voxels.size()); }
  int64_t decision_functions() const { return intercept.size(); }
};

nlohmann::json decoder_model_to_json(const DecoderModelFile& model);

// Throws std::invalid_argument "SOURCE: KEY: problem" for a file that is not an rtfmri-decoder of version 1, a
// missing or mistyped key, a model name it does not know, classes not sorted or fewer than two, a number of decision
// functions that does not fit the classes, coefficient lists of the wrong length, voxels out of the grid, repeated or
// not ascending, non-finite numbers, or a feature scale <= 0.
DecoderModelFile parse_decoder_model(const nlohmann::json& json, std::string_view source = "model");
DecoderModelFile read_decoder_model(const std::filesystem::path& path);

// Throws std::invalid_argument naming both when the model's grid is not `epi`'s (dims differ, or a corner of the grid
// maps more than 0.01 mm apart).
void require_model_grid(const DecoderModelFile& model, std::string_view model_name, const ImageHeader& epi,
                        std::string_view epi_name);

}  // namespace rtf
