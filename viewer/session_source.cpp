// load_recorded_session: tsv and jsonl parsing, NIfTI maps resampled nowhere (they share the run's grid).
#include "viewer/session_source.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/io/nifti_io.hpp"

namespace rtf::viewer {

namespace {

using Table = std::vector<std::vector<std::string>>;

Table read_tsv(const std::filesystem::path& path) {
  Table rows;
  std::ifstream in(path);
  if (!in) return rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::istringstream s(line);
    std::string field;
    while (std::getline(s, field, '\t')) row.push_back(field);
    rows.push_back(std::move(row));
  }
  return rows;
}

double to_number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    return used > 0 ? v : kNaN;
  } catch (const std::exception&) {
    return kNaN;
  }
}

int column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<float> map_or_empty(const std::filesystem::path& path, int64_t voxels) {
  if (!std::filesystem::exists(path)) return {};
  const Image image = read_nifti(path);
  if (image.header().voxels_per_volume() != voxels) return {};
  const auto v = image.volume(0);
  return {v.begin(), v.end()};
}

// The run's ROIs (rois_in_epi.nii.gz: one mask volume per ROI, named in rois_in_epi.tsv) as the stream's bits.
void load_roi_labels(const std::filesystem::path& dir, int64_t voxels, TrUpdate& u) {
  const Table names = read_tsv(dir / "rois_in_epi.tsv");
  if (names.size() < 2 || !std::filesystem::exists(dir / "rois_in_epi.nii.gz")) return;
  const Image masks = read_nifti(dir / "rois_in_epi.nii.gz");
  if (masks.header().voxels_per_volume() != voxels) return;
  u.roi_labels.assign(static_cast<size_t>(voxels), 0.0f);
  for (int64_t k = 0; k < masks.nt() && k < 24 && static_cast<size_t>(k) + 1 < names.size(); ++k) {
    const auto volume = masks.volume(k);
    for (size_t v = 0; v < volume.size(); ++v) {
      if (volume[v] > 0.0f) u.roi_labels[v] += static_cast<float>(uint32_t{1} << k);
    }
    u.roi_label_names.push_back(names[static_cast<size_t>(k) + 1].size() > 1 ? names[static_cast<size_t>(k) + 1][1]
                                                                             : std::to_string(k));
  }
  u.roi_labels_version = 0;
}

}  // namespace

RecordedSession load_recorded_session(const std::filesystem::path& session_dir, const std::string& wanted_run) {
  const std::filesystem::path runs = session_dir / "runs";
  if (!std::filesystem::is_directory(runs)) throw std::runtime_error(session_dir.string() + ": no runs/ directory");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(runs)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) throw std::runtime_error(runs.string() + ": no runs");
  RecordedSession s;
  s.run = wanted_run.empty() ? names.front() : wanted_run;
  const std::filesystem::path dir = runs / s.run;
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error(dir.string() + ": no such run");
  const std::filesystem::path bold_path = dir / "bold.nii.gz";
  if (!std::filesystem::exists(bold_path)) {
    throw std::runtime_error(bold_path.string() + " is missing (a run not ended yet: `rtfmri recover " +
                             session_dir.string() + "` writes it)");
  }
  const Image bold = read_nifti(bold_path);
  const ImageHeader& g = bold.header();
  for (int64_t t = 0; t < bold.nt(); ++t) {
    const auto v = bold.volume(t);
    s.volumes.emplace_back(v.begin(), v.end());
  }

  // Per-volume samples: motion.tsv rows define the analysed volumes (else every volume).
  std::map<int64_t, TrSample> samples;
  const Table motion = read_tsv(dir / "motion.tsv");
  if (motion.size() > 1) {
    const auto& h = motion[0];
    const int vol = column(h, "volume"), fd = column(h, "fd_mm");
    const int cols[6] = {column(h, "trans_x_mm"), column(h, "trans_y_mm"), column(h, "trans_z_mm"),
                         column(h, "rot_x_deg"),  column(h, "rot_y_deg"),  column(h, "rot_z_deg")};
    for (size_t r = 1; r < motion.size(); ++r) {
      const auto& row = motion[r];
      if (vol < 0 || static_cast<size_t>(vol) >= row.size()) continue;
      TrSample& t = samples[static_cast<int64_t>(to_number(row[static_cast<size_t>(vol)]))];
      if (fd >= 0 && static_cast<size_t>(fd) < row.size()) t.fd_mm = to_number(row[static_cast<size_t>(fd)]);
      for (int k = 0; k < 6; ++k) {
        if (cols[k] >= 0 && static_cast<size_t>(cols[k]) < row.size()) {
          t.motion[static_cast<size_t>(k)] = to_number(row[static_cast<size_t>(cols[k])]);
        }
      }
    }
  }
  std::vector<std::string> roi_names;
  const Table feedback = read_tsv(dir / "feedback.tsv");
  if (feedback.size() > 1) {
    const auto& h = feedback[0];
    const int vol = column(h, "volume"), value = column(h, "value");
    for (size_t c = 4; c < h.size(); ++c) roi_names.push_back(h[c]);
    for (size_t r = 1; r < feedback.size(); ++r) {
      const auto& row = feedback[r];
      if (vol < 0 || static_cast<size_t>(vol) >= row.size()) continue;
      TrSample& t = samples[static_cast<int64_t>(to_number(row[static_cast<size_t>(vol)]))];
      if (value >= 0 && static_cast<size_t>(value) < row.size())
        t.feedback = to_number(row[static_cast<size_t>(value)]);
      for (size_t c = 4; c < row.size() && c < h.size(); ++c) t.rois.push_back(to_number(row[c]));
    }
  }
  if (samples.empty()) {
    for (int64_t t = 0; t < bold.nt(); ++t) samples[t];
  }
  std::ifstream latency(session_dir / "latency.jsonl");
  const std::vector<std::string> fields{"written_ms", "uploaded_ms", "motion_ms", "smoothed_ms",
                                        "stats_ms",   "feedback_ms", "sent_ms"};
  for (std::string line; std::getline(latency, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("run", "") != s.run || !j.contains("index")) continue;
    const auto it = samples.find(j["index"].get<int64_t>());
    if (it == samples.end() || j.value("skipped", false)) continue;
    it->second.latency_ms.clear();
    for (const auto& f : fields) {
      it->second.latency_ms.push_back(j.contains(f) && j[f].is_number() ? j[f].get<double>() : kNaN);
    }
  }

  const int64_t voxels = g.voxels_per_volume();
  bool first = true;
  for (auto& [index, sample] : samples) {
    TrUpdate u;
    u.run = s.run;
    u.sample = std::move(sample);
    u.sample.volume = index;
    if (first) {
      u.dims = g.dims;
      for (size_t r = 0; r < 4; ++r) {
        for (size_t c = 0; c < 4; ++c) {
          u.affine[4 * r + c] = g.affine(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
        }
      }
      u.roi_names = roi_names;
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("glm_cumulative_", 0) == 0 && name.size() > 24 && u.t_map.empty()) {
          u.t_map = map_or_empty(entry.path(), voxels);
          u.contrast = name.substr(15, name.size() - 15 - 9);  // glm_cumulative_<c>_t.nii.gz
        }
      }
      load_roi_labels(dir, voxels, u);
      u.cca_map = map_or_empty(dir / "cca.nii.gz", voxels);
      u.seed_map = map_or_empty(dir / "seed_cumulative_z.nii.gz", voxels);
      const Table matrix = read_tsv(dir / "connectivity_cumulative_r.tsv");
      if (matrix.size() > 1 && matrix.size() - 1 == matrix[0].size()) {
        u.regions = matrix[0];
        u.regions_count = static_cast<int64_t>(u.regions.size());
        for (size_t r = 1; r < matrix.size(); ++r) {
          for (size_t c = 0; c < static_cast<size_t>(u.regions_count); ++c) {
            u.connectivity.push_back(static_cast<float>(c < matrix[r].size() ? to_number(matrix[r][c]) : kNaN));
          }
        }
      }
      first = false;
    }
    s.updates.push_back(std::move(u));
  }
  return s;
}

}  // namespace rtf::viewer
