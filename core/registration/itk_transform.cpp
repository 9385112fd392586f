// ITK text transform files: parsing and writing the affine family, LPS <-> RAS.
#include "core/registration/itk_transform.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/io/atomic_file.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

std::runtime_error error(const std::filesystem::path& path, const std::string& problem) {
  return std::runtime_error(fmt::format("{}: {}", path.string(), problem));
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<double> parse_numbers(const std::filesystem::path& path, const std::string& field,
                                  const std::string& text) {
  std::vector<double> values;
  std::istringstream in(text);
  std::string token;
  while (in >> token) {
    size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(token, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != token.size() || !std::isfinite(v))
      throw error(path, fmt::format("{}: '{}' is not a number", field, token));
    values.push_back(v);
  }
  return values;
}

bool type_is(const std::string& type, const std::string& family) {
  return type == family + "_double_3_3" || type == family + "_float_3_3";
}

}  // namespace

Eigen::Matrix4d flip_lps_ras(const Eigen::Matrix4d& affine) {
  const Eigen::Matrix4d f = Eigen::Vector4d(-1.0, -1.0, 1.0, 1.0).asDiagonal();
  return f * affine * f;
}

Eigen::Matrix4d read_itk_affine(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(path, "cannot open the transform file");
  std::string line;
  if (!std::getline(in, line) || trim(line).rfind("#Insight Transform File", 0) != 0) {
    throw error(path,
                "not an ITK text transform file (it must start with '#Insight Transform File V1.0'; a binary "
                ".mat from ANTs converts with 'ConvertTransformFile 3 in.mat out.txt')");
  }
  std::string type;
  std::vector<double> params, fixed;
  bool has_params = false, has_fixed = false;
  int transforms = 0;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("#Transform ", 0) == 0) ++transforms;
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) throw error(path, fmt::format("unexpected line '{}'", line));
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "Transform") {
      if (value.rfind("CompositeTransform", 0) == 0) {
        throw error(path, "is a composite transform; give its transforms as separate files");
      }
      if (!type.empty()) throw error(path, "holds several transforms; rtfmri reads one transform per file");
      type = value;
    } else if (key == "Parameters") {
      params = parse_numbers(path, key, value);
      has_params = true;
    } else if (key == "FixedParameters") {
      fixed = parse_numbers(path, key, value);
      has_fixed = true;
    } else {
      throw error(path, fmt::format("unknown field '{}'", key));
    }
  }
  if (transforms > 1) throw error(path, "holds several transforms; rtfmri reads one transform per file");
  if (type.empty()) throw error(path, "no 'Transform:' line");
  Eigen::Matrix4d lps = Eigen::Matrix4d::Identity();
  auto need = [&](size_t n_params, size_t n_fixed) {
    if (!has_params || params.size() != n_params) {
      throw error(path, fmt::format("{} needs {} Parameters, found {}", type, n_params, params.size()));
    }
    if (n_fixed > 0 && (!has_fixed || fixed.size() != n_fixed)) {
      throw error(path, fmt::format("{} needs {} FixedParameters, found {}", type, n_fixed, fixed.size()));
    }
  };
  if (type_is(type, "AffineTransform") || type_is(type, "MatrixOffsetTransformBase")) {
    need(12, 3);
    Eigen::Matrix3d m;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m(r, c) = params[3 * static_cast<size_t>(r) + static_cast<size_t>(c)];
    }
    const Eigen::Vector3d t(params[9], params[10], params[11]);
    const Eigen::Vector3d centre(fixed[0], fixed[1], fixed[2]);
    lps.topLeftCorner<3, 3>() = m;
    lps.topRightCorner<3, 1>() = t + centre - m * centre;
  } else if (type_is(type, "TranslationTransform")) {
    need(3, 0);
    lps.topRightCorner<3, 1>() = Eigen::Vector3d(params[0], params[1], params[2]);
  } else if (type_is(type, "IdentityTransform")) {
    // no parameters
  } else {
    throw error(path, fmt::format("transform type '{}' is not supported (affine, translation or identity, 3D)", type));
  }
  Eigen::Matrix4d ras = flip_lps_ras(lps);
  try {
    inverse_affine(ras, "transform");
  } catch (const std::invalid_argument& e) {
    throw error(path, e.what());
  }
  return ras;
}

std::string format_itk_affine(const Eigen::Matrix4d& ras) {
  const Eigen::Matrix4d lps = flip_lps_ras(ras);
  std::string text = "#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\nParameters:";
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) text += fmt::format(" {:.17g}", lps(r, c));
  }
  for (int r = 0; r < 3; ++r) text += fmt::format(" {:.17g}", lps(r, 3));
  text += "\nFixedParameters: 0 0 0\n";
  return text;
}

void write_itk_affine(const std::filesystem::path& path, const Eigen::Matrix4d& ras) {
  write_text_atomically(path, format_itk_affine(ras));
}

}  // namespace rtf
