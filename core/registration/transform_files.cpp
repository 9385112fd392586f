// Transform arguments: the "[FILE,1]" syntax, fields by extension.
#include "core/registration/transform_files.hpp"

#include <memory>
#include <regex>
#include <stdexcept>

#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"

namespace rtf {

namespace {

bool is_nifti(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".nii") || ends(".nii.gz");
}

}  // namespace

SpatialTransform read_transform_spec(const std::string& argument) {
  static const std::regex kBracketed(R"(^\[(.+),\s*([01])\]$)");
  std::smatch match;
  std::string path = argument;
  bool inverse = false;
  if (std::regex_match(argument, match, kBracketed)) {
    path = match[1].str();
    inverse = match[2].str() == "1";
  }
  if (is_nifti(path)) {
    if (inverse) {
      throw std::invalid_argument(path +
                                  ": a displacement field has no closed-form inverse; give the inverse field "
                                  "instead (registration writes both)");
    }
    return std::make_shared<const Image>(read_displacement_field(path));
  }
  const Eigen::Matrix4d t = read_itk_affine(path);
  return inverse ? inverse_affine(t, path) : t;
}

}  // namespace rtf
