// The model file: JSON written with nlohmann::json; reading walks every key with a check and a message of its own.
#include "core/decoding/decoder_model_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rtf {

namespace {

const char* scaling_name(FeatureScaling s) {
  switch (s) {
    case FeatureScaling::kNone:
      return "none";
    case FeatureScaling::kFeatureScale:
      return "feature_scale";
    default:
      return "per run";
  }
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}
  [[noreturn]] void fail(std::string_view key, const std::string& problem) const {
    throw std::invalid_argument(fmt::format("{}: {}: {}", source_, key, problem));
  }
  const nlohmann::json& at(const nlohmann::json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(key, "missing");
    return j.at(key);
  }
  double number(const nlohmann::json& v, std::string_view key) const {
    if (!v.is_number()) fail(key, fmt::format("a number, not {}", v.type_name()));
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(key, "not finite");
    return x;
  }
  std::vector<double> numbers(const nlohmann::json& v, std::string_view key, size_t length) const {
    if (!v.is_array()) fail(key, fmt::format("a list of numbers, not {}", v.type_name()));
    if (v.size() != length) fail(key, fmt::format("{} numbers where {} were expected", v.size(), length));
    std::vector<double> out;
    out.reserve(length);
    for (const nlohmann::json& x : v) out.push_back(number(x, key));
    return out;
  }

 private:
  std::string source_;
};

}  // namespace

nlohmann::json decoder_model_to_json(const DecoderModelFile& m) {
  nlohmann::json j;
  j["format"] = "rtfmri-decoder";
  j["version"] = 1;
  j["model"] = decoder_model_name(m.model);
  j["classes"] = m.classes;
  j["decision_functions"] = m.decision_functions();
  if (m.decision_functions() == 1 && m.classes.size() == 2) j["positive_class"] = m.classes[1];
  nlohmann::json affine = nlohmann::json::array();
  for (int row = 0; row < 4; ++row)
    affine.push_back({m.affine(row, 0), m.affine(row, 1), m.affine(row, 2), m.affine(row, 3)});
  j["grid"] = {{"dims", m.dims}, {"affine", affine}};
  j["mask_voxels"] = m.voxels;
  nlohmann::json coef = nlohmann::json::array();
  for (Eigen::Index k = 0; k < m.coef.cols(); ++k) {
    coef.push_back(std::vector<double>(m.coef.col(k).data(), m.coef.col(k).data() + m.coef.rows()));
  }
  j["coef"] = coef;
  j["intercept"] = std::vector<double>(m.intercept.data(), m.intercept.data() + m.intercept.size());
  j["preprocessing"] = {
      {"detrend_poly_order", m.detrend_poly_order ? nlohmann::json(*m.detrend_poly_order) : nlohmann::json()},
      {"highpass_cutoff_s", m.highpass_cutoff_s ? nlohmann::json(*m.highpass_cutoff_s) : nlohmann::json()},
      {"zscore", scaling_name(m.scaling)},
      {"lag_s", m.lag_s},
      {"rest", m.rest}};
  if (m.scaling == FeatureScaling::kFeatureScale) {
    j["feature_mean"] = m.feature_mean;
    j["feature_scale"] = m.feature_scale;
  }
  j["training"] = m.training;
  return j;
}

DecoderModelFile parse_decoder_model(const nlohmann::json& j, std::string_view source) {
  const Reader r(source);
  DecoderModelFile m;
  if (!j.is_object()) r.fail("(file)", "not a JSON object");
  if (r.at(j, "format") != "rtfmri-decoder") r.fail("format", "not \"rtfmri-decoder\"");
  if (r.at(j, "version") != 1)
    r.fail("version", fmt::format("{}: this rtfmri reads version 1", r.at(j, "version").dump()));
  const nlohmann::json& model = r.at(j, "model");
  if (!model.is_string()) r.fail("model", "a string");
  try {
    m.model = decoder_model(model.get<std::string>());
  } catch (const std::invalid_argument& e) {
    r.fail("model", e.what());
  }
  const nlohmann::json& classes = r.at(j, "classes");
  if (!classes.is_array() || classes.size() < 2) r.fail("classes", "a list of two names or more");
  for (const nlohmann::json& c : classes) {
    if (!c.is_string()) r.fail("classes", "names (strings)");
    m.classes.push_back(c.get<std::string>());
  }
  for (size_t i = 1; i < m.classes.size(); ++i) {
    if (!(m.classes[i - 1] < m.classes[i])) r.fail("classes", "not sorted (byte order) or repeated");
  }
  const nlohmann::json& grid = r.at(j, "grid");
  const std::vector<double> dims = r.numbers(r.at(grid, "dims"), "grid.dims", 3);
  for (size_t a = 0; a < 3; ++a) {
    if (dims[a] < 1 || dims[a] != std::floor(dims[a])) r.fail("grid.dims", "three whole numbers >= 1");
    m.dims[a] = static_cast<int64_t>(dims[a]);
  }
  const nlohmann::json& affine = r.at(grid, "affine");
  if (!affine.is_array() || affine.size() != 4) r.fail("grid.affine", "4 rows of 4 numbers");
  for (int row = 0; row < 4; ++row) {
    const std::vector<double> v = r.numbers(affine[static_cast<size_t>(row)], "grid.affine", 4);
    for (int c = 0; c < 4; ++c) m.affine(row, c) = v[static_cast<size_t>(c)];
  }
  const nlohmann::json& voxels = r.at(j, "mask_voxels");
  if (!voxels.is_array() || voxels.empty()) r.fail("mask_voxels", "a non-empty list of voxel indices");
  const int64_t volume = m.dims[0] * m.dims[1] * m.dims[2];
  for (const nlohmann::json& v : voxels) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= volume) {
      r.fail("mask_voxels",
             fmt::format("{} is not a voxel of the {} x {} x {} grid", v.dump(), m.dims[0], m.dims[1], m.dims[2]));
    }
    if (!m.voxels.empty() && v.get<int64_t>() <= m.voxels.back()) r.fail("mask_voxels", "not ascending, or repeated");
    m.voxels.push_back(static_cast<int>(v.get<int64_t>()));
  }
  const auto p = m.voxels.size();
  const size_t functions = m.classes.size() == 2 ? 1 : m.classes.size();
  const nlohmann::json& coef = r.at(j, "coef");
  if (!coef.is_array() || coef.size() != functions) {
    r.fail("coef", fmt::format("{} list(s) of weights for {} classes", functions, m.classes.size()));
  }
  m.coef.resize(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(functions));
  for (size_t k = 0; k < functions; ++k) {
    const std::vector<double> w = r.numbers(coef[k], "coef", p);
    for (size_t f = 0; f < p; ++f) m.coef(static_cast<Eigen::Index>(f), static_cast<Eigen::Index>(k)) = w[f];
  }
  const std::vector<double> intercept = r.numbers(r.at(j, "intercept"), "intercept", functions);
  m.intercept = Eigen::Map<const Eigen::VectorXd>(intercept.data(), static_cast<Eigen::Index>(functions));
  if (j.contains("decision_functions") && j["decision_functions"] != functions) {
    r.fail("decision_functions",
           fmt::format("{} where the classes give {}", j["decision_functions"].dump(), functions));
  }
  const nlohmann::json& pre = r.at(j, "preprocessing");
  const nlohmann::json& poly = r.at(pre, "detrend_poly_order");
  if (poly.is_null()) {
    m.detrend_poly_order.reset();
  } else if (!poly.is_number_integer() || poly.get<int>() < 0 || poly.get<int>() > 10) {
    r.fail("preprocessing.detrend_poly_order", "0 to 10, or null");
  } else {
    m.detrend_poly_order = poly.get<int>();
  }
  const nlohmann::json& highpass = r.at(pre, "highpass_cutoff_s");
  if (!highpass.is_null()) m.highpass_cutoff_s = r.number(highpass, "preprocessing.highpass_cutoff_s");
  const nlohmann::json& zscore = r.at(pre, "zscore");
  if (zscore == "per run") {
    m.scaling = FeatureScaling::kPerRun;
  } else if (zscore == "none") {
    m.scaling = FeatureScaling::kNone;
  } else if (zscore == "feature_scale") {
    m.scaling = FeatureScaling::kFeatureScale;
    m.feature_mean = r.numbers(r.at(j, "feature_mean"), "feature_mean", p);
    m.feature_scale = r.numbers(r.at(j, "feature_scale"), "feature_scale", p);
    for (const double s : m.feature_scale) {
      if (!(s > 0.0)) r.fail("feature_scale", "every scale must be > 0");
    }
  } else {
    r.fail("preprocessing.zscore", "\"per run\", \"none\" or \"feature_scale\"");
  }
  m.lag_s = r.number(r.at(pre, "lag_s"), "preprocessing.lag_s");
  if (pre.contains("rest") && pre["rest"].is_string()) m.rest = pre["rest"].get<std::string>();
  if (j.contains("training")) m.training = j["training"];
  return m;
}

DecoderModelFile read_decoder_model(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot be read", path.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(fmt::format("{}: not JSON ({})", path.string(), e.what()));
  }
  return parse_decoder_model(j, path.string());
}

void require_model_grid(const DecoderModelFile& model, std::string_view model_name, const ImageHeader& epi,
                        std::string_view epi_name) {
  if (model.dims[0] != epi.dims[0] || model.dims[1] != epi.dims[1] || model.dims[2] != epi.dims[2]) {
    throw std::invalid_argument(fmt::format("{}: the model's grid is {}x{}x{}, {}'s {}x{}x{}", model_name,
                                            model.dims[0], model.dims[1], model.dims[2], epi_name, epi.dims[0],
                                            epi.dims[1], epi.dims[2]));
  }
  double worst = 0.0;
  for (int corner = 0; corner < 8; ++corner) {
    const Eigen::Vector4d v((corner & 1) ? static_cast<double>(epi.dims[0] - 1) : 0.0,
                            (corner & 2) ? static_cast<double>(epi.dims[1] - 1) : 0.0,
                            (corner & 4) ? static_cast<double>(epi.dims[2] - 1) : 0.0, 1.0);
    worst = std::max(worst, (model.affine * v - epi.affine * v).head<3>().norm());
  }
  if (worst > 0.01) {
    throw std::invalid_argument(fmt::format(
        "{}: the model's grid lies {:.3g} mm from {}'s (same dims, another position or orientation): train it on "
        "this session's runs or resample it",
        model_name, worst, epi_name));
  }
}

}  // namespace rtf
