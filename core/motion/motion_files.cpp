// Motion TSV and FSL .par readers (motion_files.hpp).
#include "core/motion/motion_files.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rtf {
namespace {

bool parse_number(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}

std::vector<std::string> split(const std::string& line, bool tabs_only) {
  std::vector<std::string> out;
  std::string field;
  for (char ch : line) {
    const bool sep = tabs_only ? ch == '\t' : (ch == ' ' || ch == '\t');
    if (sep) {
      if (tabs_only || !field.empty()) out.push_back(field);
      field.clear();
    } else if (ch != '\r') {
      field.push_back(ch);
    }
  }
  if (tabs_only || !field.empty()) out.push_back(field);
  return out;
}

}  // namespace

std::vector<RigidParams> parse_motion_tsv(std::string_view text, const std::string& name) {
  static const std::array<std::string, 6> kColumns{"trans_x_mm", "trans_y_mm", "trans_z_mm",
                                                   "rot_x_deg",  "rot_y_deg",  "rot_z_deg"};
  std::istringstream in{std::string(text)};
  std::string line;
  std::array<int, 6> col{-1, -1, -1, -1, -1, -1};
  bool have_header = false;
  int line_no = 0;
  std::vector<RigidParams> out;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split(line, true);
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) {
        for (size_t c = 0; c < kColumns.size(); ++c) {
          if (fields[i] == kColumns[c]) col[c] = static_cast<int>(i);
        }
      }
      for (size_t c = 0; c < kColumns.size(); ++c) {
        if (col[c] < 0) {
          throw std::invalid_argument(fmt::format(
              "{}: line {}: the header has no column '{}' (expected trans_x_mm ... rot_z_deg, tab-separated)", name,
              line_no, kColumns[c]));
        }
      }
      have_header = true;
      continue;
    }
    std::array<double, 6> v{};
    for (size_t c = 0; c < 6; ++c) {
      const auto i = static_cast<size_t>(col[c]);
      if (i >= fields.size() || !parse_number(fields[i], v[c])) {
        throw std::invalid_argument(fmt::format("{}: line {}: no number in column '{}'", name, line_no, kColumns[c]));
      }
    }
    RigidParams p;
    p.translation_mm = {v[0], v[1], v[2]};
    p.rotation_deg = {v[3], v[4], v[5]};
    out.push_back(p);
  }
  if (!have_header) throw std::invalid_argument(fmt::format("{}: empty motion file", name));
  return out;
}

std::vector<RigidParams> parse_fsl_par(std::string_view text, const std::string& name) {
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  std::vector<RigidParams> out;
  while (std::getline(in, line)) {
    ++line_no;
    const auto fields = split(line, false);
    if (fields.empty()) continue;
    std::array<double, 6> v{};
    if (fields.size() != 6) {
      throw std::invalid_argument(
          fmt::format("{}: line {}: {} numbers, expected 6 (rx ry rz tx ty tz)", name, line_no, fields.size()));
    }
    for (size_t c = 0; c < 6; ++c) {
      if (!parse_number(fields[c], v[c])) {
        throw std::invalid_argument(fmt::format("{}: line {}: '{}' is not a number", name, line_no, fields[c]));
      }
    }
    out.push_back(from_fsl_par(v));
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("{}: no motion parameters", name));
  return out;
}

std::vector<RigidParams> read_motion_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the motion file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (path.extension() == ".par") return parse_fsl_par(text.str(), path.string());
  return parse_motion_tsv(text.str(), path.string());
}

}  // namespace rtf
