// Ground-truth text files of the phantom (motion, events, design, BIDS sidecar).
#include "sim/phantom/ground_truth_writers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.hpp"

namespace rtf::sim {

std::string motion_tsv(const std::vector<RigidParams>& motion) {
  std::string s = "volume\ttrans_x_mm\ttrans_y_mm\ttrans_z_mm\trot_x_deg\trot_y_deg\trot_z_deg\n";
  for (size_t t = 0; t < motion.size(); ++t) {
    const auto& p = motion[t];
    s += fmt::format("{}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\n", t, p.translation_mm[0],
                     p.translation_mm[1], p.translation_mm[2], p.rotation_deg[0], p.rotation_deg[1], p.rotation_deg[2]);
  }
  return s;
}

std::string motion_par(const std::vector<RigidParams>& motion) {
  std::string s;
  for (const auto& p : motion) {
    const auto v = to_fsl_par(p);
    s += fmt::format("{:.8f}  {:.8f}  {:.8f}  {:.6f}  {:.6f}  {:.6f}\n", v[0], v[1], v[2], v[3], v[4], v[5]);
  }
  return s;
}

std::string events_tsv(const std::vector<Event>& events) {
  std::string s = "onset\tduration\ttrial_type\n";
  for (const auto& e : events) s += fmt::format("{:.4f}\t{:.4f}\t{}\n", e.onset_s, e.duration_s, e.trial_type);
  return s;
}

std::string design_tsv(const Design& design, double offset_s) {
  std::string s;
  for (size_t c = 0; c < design.conditions().size(); ++c) s += (c ? "\t" : "") + design.conditions()[c];
  s += "\n";
  for (const auto& row : design.sampled(offset_s)) {
    for (size_t c = 0; c < row.size(); ++c) s += fmt::format("{}{:.8f}", c ? "\t" : "", row[c]);
    s += "\n";
  }
  return s;
}

std::string bold_sidecar_json(double tr_s, const std::vector<double>& slice_times_s) {
  nlohmann::ordered_json j;
  j["RepetitionTime"] = tr_s;
  const bool staggered = std::any_of(slice_times_s.begin(), slice_times_s.end(), [](double t) { return t != 0.0; });
  if (staggered) j["SliceTiming"] = slice_times_s;
  j["TaskName"] = "phantom";
  j["Manufacturer"] = "rtfmri sim phantom (synthetic; ground truth in phantom.json)";
  return j.dump(2) + "\n";
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  write_text_atomically(path, text);
}

}  // namespace rtf::sim
