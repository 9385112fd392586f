// Subject lists and BIDS folders for `rtfmri batch`.
#include "core/scale/subject_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rtf {

namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string strip_image_extension(std::string name) {
  for (const char* ext : {".nii.gz", ".nii"}) {
    if (ends_with(name, ext)) return name.substr(0, name.size() - std::string(ext).size());
  }
  return name;
}

// A BOLD run's events file: the image's name with _bold.nii[.gz] replaced by _events.tsv ("" when absent).
std::string events_beside(const fs::path& bold) {
  const std::string stem = strip_image_extension(bold.filename().string());
  if (!ends_with(stem, "_bold")) return "";
  const fs::path events = bold.parent_path() / (stem.substr(0, stem.size() - 5) + "_events.tsv");
  return fs::exists(events) ? events.string() : "";
}

}  // namespace

std::string subject_id_from_path(const std::string& path, const std::string& suffix) {
  std::string stem = strip_image_extension(fs::path(path).filename().string());
  if (!suffix.empty() && ends_with(stem, "_" + suffix)) stem.resize(stem.size() - suffix.size() - 1);
  return stem;
}

std::vector<BatchSubject> read_subject_list(const fs::path& list, const std::string& suffix) {
  std::ifstream in(list);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the subject list", list.string()));
  std::vector<BatchSubject> subjects;
  std::set<std::string> ids;
  std::string line;
  int number = 0;
  const fs::path base = list.parent_path();
  while (std::getline(in, line)) {
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty()) continue;
    if (f.size() > 3) {
      throw std::invalid_argument(
          fmt::format("{}:{}: {} fields (give PATH, ID PATH or ID PATH EVENTS)", list.string(), number, f.size()));
    }
    const auto resolve = [&](const std::string& p) {
      const fs::path path = fs::path(p).is_absolute() ? fs::path(p) : base / p;
      if (!fs::is_regular_file(path)) {
        throw std::invalid_argument(fmt::format("{}:{}: {} does not exist", list.string(), number, path.string()));
      }
      return path.string();
    };
    BatchSubject s;
    s.input = resolve(f.size() == 1 ? f[0] : f[1]);
    s.id = f.size() == 1 ? subject_id_from_path(s.input, suffix) : f[0];
    if (f.size() == 3) {
      s.events = resolve(f[2]);
    } else if (suffix == "bold") {
      s.events = events_beside(s.input);
    }
    if (s.id.empty() || s.id.find('/') != std::string::npos || s.id == "." || s.id == "..") {
      throw std::invalid_argument(fmt::format("{}:{}: '{}' is not a usable subject ID", list.string(), number, s.id));
    }
    if (!ids.insert(s.id).second) {
      throw std::invalid_argument(fmt::format("{}:{}: subject ID {} appears twice", list.string(), number, s.id));
    }
    s.folder = s.id;
    subjects.push_back(s);
  }
  if (subjects.empty()) throw std::invalid_argument(fmt::format("{}: no subject in the list", list.string()));
  return subjects;
}

std::vector<BatchSubject> find_bids_subjects(const fs::path& root, const std::string& suffix) {
  if (!fs::is_directory(root)) throw std::invalid_argument(fmt::format("{}: not a folder", root.string()));
  const std::string datatype = suffix == "bold" ? "func" : "anat";
  std::vector<fs::path> folders;
  for (const auto& sub : fs::directory_iterator(root)) {
    if (!sub.is_directory() || sub.path().filename().string().rfind("sub-", 0) != 0) continue;
    folders.push_back(sub.path() / datatype);
    for (const auto& ses : fs::directory_iterator(sub.path())) {
      if (ses.is_directory() && ses.path().filename().string().rfind("ses-", 0) == 0) {
        folders.push_back(ses.path() / datatype);
      }
    }
  }
  std::vector<BatchSubject> subjects;
  for (const fs::path& folder : folders) {
    if (!fs::is_directory(folder)) continue;
    for (const auto& e : fs::directory_iterator(folder)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || !ends_with(strip_image_extension(name), "_" + suffix) ||
          strip_image_extension(name) == name) {
        continue;
      }
      BatchSubject s;
      s.input = e.path().string();
      s.id = subject_id_from_path(s.input, suffix);
      s.events = suffix == "bold" ? events_beside(e.path()) : "";
      s.folder = fs::relative(folder, root).string();
      subjects.push_back(s);
    }
  }
  std::sort(subjects.begin(), subjects.end(), [](const auto& a, const auto& b) { return a.input < b.input; });
  if (subjects.empty()) {
    throw std::invalid_argument(
        fmt::format("{}: no sub-*/[ses-*/]{}/*_{}.nii[.gz] (a BIDS folder?)", root.string(), datatype, suffix));
  }
  return subjects;
}

}  // namespace rtf
