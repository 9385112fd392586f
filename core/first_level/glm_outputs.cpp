// The glm command's shared outputs: file-safe names, the design's TSV, map summaries, the mask image.
#include "core/first_level/glm_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/io/atomic_file.hpp"

namespace rtf {

std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out.push_back(c);
    if (c == '-') out += "Minus";
    if (c == '+') out += "Plus";
  }
  return out.empty() ? "contrast" : out;
}

void write_design(const std::filesystem::path& path, const DesignMatrix& d) {
  std::string text;
  const auto names = d.names();
  for (size_t j = 0; j < names.size(); ++j) text += (j ? "\t" : "") + names[j];
  text += "\n";
  for (Eigen::Index t = 0; t < d.x.rows(); ++t) {
    for (Eigen::Index j = 0; j < d.x.cols(); ++j) text += fmt::format("{}{:.8g}", j ? "\t" : "", d.x(t, j));
    text += "\n";
  }
  write_text_atomically(path, text);
}

std::pair<int64_t, double> summarize(const Image& map, double threshold, bool absolute) {
  int64_t above = 0;
  double peak = 0.0;
  for (float v : map.data()) {
    if (!std::isfinite(v)) continue;
    const double x = absolute ? std::abs(v) : v;
    if (x > threshold) ++above;
    peak = std::max(peak, x);
  }
  return {above, peak};
}

Image mask_image(const ImageHeader& grid, const std::vector<uint8_t>& mask) {
  ImageHeader h = grid;
  h.num_volumes = 1;
  Image m(h);
  std::copy(mask.begin(), mask.end(), m.data().begin());
  return m;
}

}  // namespace rtf
