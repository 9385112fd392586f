// Parsing of activation regions and their link to the design's conditions.
#include "sim/phantom/activation.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace rtf::sim {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double number(const std::string& field, const std::string& text, const char* what) {
  double v = 0.0;
  const char* begin = field.data();
  const char* end = field.data() + field.size();
  if (begin != end && *begin == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || begin == end || !std::isfinite(v)) {
    throw std::invalid_argument(fmt::format(
        "region '{}': {} '{}' is not a number (expected x,y,z,radius[,trial_type[,psc]] in mm)", text, what, field));
  }
  return v;
}

}  // namespace

ActivationRegion parse_region(const std::string& text) {
  const auto f = split_commas(text);
  if (f.size() < 4 || f.size() > 6) {
    throw std::invalid_argument(
        fmt::format("region '{}': expected x,y,z,radius[,trial_type[,psc]] (mm, template world space)", text));
  }
  ActivationRegion r;
  r.centre_mm = {number(f[0], text, "x"), number(f[1], text, "y"), number(f[2], text, "z")};
  r.radius_mm = number(f[3], text, "radius");
  if (!(r.radius_mm > 0.0)) throw std::invalid_argument(fmt::format("region '{}': radius must be > 0 mm", text));
  if (f.size() >= 5) r.trial_type = f[4];
  if (f.size() == 6) {
    r.psc = number(f[5], text, "psc");
    if (r.psc < 0.0) throw std::invalid_argument(fmt::format("region '{}': psc must be >= 0", text));
  }
  return r;
}

std::string to_string(const ActivationRegion& r) {
  std::string s = fmt::format("{},{},{},{}", r.centre_mm[0], r.centre_mm[1], r.centre_mm[2], r.radius_mm);
  if (!r.trial_type.empty() || r.psc >= 0.0) s += "," + r.trial_type;
  if (r.psc >= 0.0) s += fmt::format(",{}", r.psc);
  return s;
}

std::vector<ResolvedRegion> resolve_regions(const std::vector<ActivationRegion>& regions, const Design& design,
                                            double default_psc) {
  std::vector<ResolvedRegion> out;
  for (const auto& r : regions) {
    ResolvedRegion rr;
    rr.centre_mm = Eigen::Vector3d(r.centre_mm[0], r.centre_mm[1], r.centre_mm[2]);
    rr.radius_mm = r.radius_mm;
    rr.psc = r.psc >= 0.0 ? r.psc : default_psc;
    rr.label = to_string(r);
    if (r.trial_type.empty()) {
      for (size_t c = 0; c < design.conditions().size(); ++c) rr.conditions.push_back(static_cast<int>(c));
    } else {
      const int c = design.condition_index(r.trial_type);
      if (c < 0) {
        std::string names;
        for (const auto& n : design.conditions()) names += (names.empty() ? "" : ", ") + n;
        throw std::invalid_argument(fmt::format("region '{}': trial type '{}' is not in the design (conditions: {})",
                                                rr.label, r.trial_type, names));
      }
      rr.conditions.push_back(c);
    }
    out.push_back(std::move(rr));
  }
  return out;
}

}  // namespace rtf::sim
