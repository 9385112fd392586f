// The decoder model file: what decoder_model_to_json writes parse_decoder_model reads back exactly (both scalings),
// the file examples/export_sklearn_decoder.py's format names parse, and every malformed file is refused naming its
// key: the format and version, the model, classes, grid, voxels, weights' lengths, scaling, non-finite numbers.
#include <gtest/gtest.h>

#include <functional>

#include "core/decoding/decoder_model_file.hpp"

namespace rtf {
namespace {

DecoderModelFile small_model() {
  DecoderModelFile m;
  m.model = DecoderModel::kSvmHinge;
  m.classes = {"a", "b", "c"};
  m.dims = {4, 3, 2};
  m.affine.diagonal() << 2.0, 2.0, 3.0, 1.0;
  m.affine(0, 3) = -4.5;
  m.voxels = {1, 5, 6, 23};
  m.coef = Eigen::MatrixXd::Random(4, 3);
  m.intercept = Eigen::VectorXd::Random(3);
  m.detrend_poly_order = 1;
  m.lag_s = 5.5;
  m.rest = "rest";
  m.training = {{"samples", 40}};
  return m;
}

void expect_same(const DecoderModelFile& a, const DecoderModelFile& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.affine, b.affine);
  EXPECT_EQ(a.voxels, b.voxels);
  EXPECT_EQ(a.coef, b.coef);  // JSON numbers round-trip doubles exactly
  EXPECT_EQ(a.intercept, b.intercept);
  EXPECT_EQ(a.detrend_poly_order, b.detrend_poly_order);
  EXPECT_EQ(a.highpass_cutoff_s, b.highpass_cutoff_s);
  EXPECT_EQ(a.scaling, b.scaling);
  EXPECT_EQ(a.feature_mean, b.feature_mean);
  EXPECT_EQ(a.feature_scale, b.feature_scale);
  EXPECT_EQ(a.lag_s, b.lag_s);
  EXPECT_EQ(a.rest, b.rest);
  EXPECT_EQ(a.training, b.training);
}

TEST(DecoderModelFile, RoundTripsExactly) {
  const DecoderModelFile m = small_model();
  expect_same(parse_decoder_model(nlohmann::json::parse(decoder_model_to_json(m).dump())), m);
  DecoderModelFile scaled = small_model();
  scaled.model = DecoderModel::kLogistic;
  scaled.classes = {"face", "house"};
  scaled.coef = Eigen::MatrixXd::Random(4, 1);
  scaled.intercept = Eigen::VectorXd::Random(1);
  scaled.scaling = FeatureScaling::kFeatureScale;
  scaled.feature_mean = {0.5, -1.0, 2.0, 0.0};
  scaled.feature_scale = {1.0, 2.0, 0.5, 3.0};
  scaled.detrend_poly_order.reset();
  scaled.highpass_cutoff_s = 128.0;
  const nlohmann::json j = decoder_model_to_json(scaled);
  EXPECT_EQ(j["positive_class"], "house");
  expect_same(parse_decoder_model(nlohmann::json::parse(j.dump())), scaled);
}

// Each edit breaks one key; the message must name it.
TEST(DecoderModelFile, RefusesMalformedFilesNamingTheKey) {
  const nlohmann::json good = decoder_model_to_json(small_model());
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> edits{
      {[](nlohmann::json& j) { j["format"] = "sklearn"; }, "format"},
      {[](nlohmann::json& j) { j["version"] = 2; }, "version: 2"},
      {[](nlohmann::json& j) { j["model"] = "forest"; }, "model"},
      {[](nlohmann::json& j) {
         j["classes"] = {"b", "a", "c"};
       },
       "classes: not sorted"},
      {[](nlohmann::json& j) { j["classes"] = {"a"}; }, "classes"},
      {[](nlohmann::json& j) {
         j["grid"]["dims"] = {4, 3};
       },
       "grid.dims"},
      {[](nlohmann::json& j) {
         j["mask_voxels"] = {1, 5, 5, 23};
       },
       "mask_voxels: not ascending"},
      {[](nlohmann::json& j) {
         j["mask_voxels"] = {1, 5, 6, 24};
       },
       "mask_voxels: 24 is not a voxel"},
      {[](nlohmann::json& j) { j["coef"][1].erase(0); }, "coef: 3 numbers where 4"},
      {[](nlohmann::json& j) { j["coef"].erase(2); }, "coef: 3 list(s)"},
      {[](nlohmann::json& j) { j["intercept"][0] = "x"; }, "intercept: a number"},
      {[](nlohmann::json& j) { j.erase("intercept"); }, "intercept: missing"},
      {[](nlohmann::json& j) { j["preprocessing"]["zscore"] = "robust"; }, "preprocessing.zscore"},
      {[](nlohmann::json& j) { j["preprocessing"]["zscore"] = "feature_scale"; }, "feature_mean: missing"},
      {[](nlohmann::json& j) {
         j["preprocessing"]["zscore"] = "feature_scale";
         j["feature_mean"] = {0, 0, 0, 0};
         j["feature_scale"] = {1, 0, 1, 1};
       },
       "feature_scale: every scale must be > 0"},
      {[](nlohmann::json& j) { j["preprocessing"]["detrend_poly_order"] = 11; }, "preprocessing.detrend_poly_order"},
      {[](nlohmann::json& j) { j["decision_functions"] = 1; }, "decision_functions"},
  };
  for (const auto& [edit, key] : edits) {
    nlohmann::json bad = good;
    edit(bad);
    try {
      parse_decoder_model(bad, "m.json");
      ADD_FAILURE() << "accepted a file broken at " << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("m.json: " + key), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_decoder_model("/nonexistent/model.json"), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
