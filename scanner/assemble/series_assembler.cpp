// Per-series bookkeeping of an export folder: which layout a file has, which volume it belongs to, and when a volume
// is complete. See series_assembler.hpp.
#include "scanner/assemble/series_assembler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <new>

#include "scanner/assemble/enhanced_volume.hpp"
#include "scanner/assemble/par_rec_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"

namespace rtf::dicom {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::pair<ScannerFormat, std::string_view>, 5> kFormatNames{{
    {ScannerFormat::kAuto, "auto"},
    {ScannerFormat::kSiemensMosaic, "siemens-mosaic"},
    {ScannerFormat::kEnhanced, "enhanced"},
    {ScannerFormat::kGe, "ge"},
    {ScannerFormat::kPhilips, "philips"},
}};

std::string lower_extension(const fs::path& file) {
  std::string e = file.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

// The number at the end of a name ("Dump-0007" -> 7, "0001" -> 1); -1 if none.
int64_t trailing_number(const std::string& name) {
  size_t start = name.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1])) != 0) --start;
  if (start == name.size() || name.size() - start > 12) return -1;
  return std::stoll(name.substr(start));
}

AddResult with_status(AddResult::Status status, std::string reason) {
  AddResult r;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

std::string run_name(int number, int start) {
  return start <= 1 ? fmt::format("series-{:03d}", number) : fmt::format("series-{:03d}-{}", number, start);
}

// Slices per volume and this file's volume index for single-slice layouts, from the headers (or the option).
// Philips classic DICOM numbers volumes with TemporalPositionIdentifier; GE numbers instances across the series with
// ImagesInAcquisition slices per volume.
std::optional<std::pair<int, int64_t>> slice_slot(const DicomHeader& h, int slices_option) {
  if (h.temporal_position > 0) {
    int n = slices_option;
    if (n == 0 && h.images_in_acquisition > 0) {
      const int ntp = h.number_of_temporal_positions;
      n = ntp > 1 && h.images_in_acquisition % ntp == 0 && h.images_in_acquisition > ntp ? h.images_in_acquisition / ntp
                                                                                         : h.images_in_acquisition;
    }
    if (n <= 0) return std::nullopt;
    return std::pair<int, int64_t>{n, h.temporal_position - 1};
  }
  const int n = slices_option > 0 ? slices_option : h.images_in_acquisition;
  if (n <= 0 || h.instance_number < 1) return std::nullopt;
  return std::pair<int, int64_t>{n, (h.instance_number - 1) / n};
}

}  // namespace

std::optional<ScannerFormat> scanner_format_from_string(std::string_view name) {
  for (const auto& [format, text] : kFormatNames) {
    if (text == name) return format;
  }
  return std::nullopt;
}

std::string_view to_string(ScannerFormat format) {
  for (const auto& [f, text] : kFormatNames) {
    if (f == format) return text;
  }
  return "?";
}

std::string_view to_string(AddResult::Status status) {
  switch (status) {
    case AddResult::Status::kUsed:
      return "used";
    case AddResult::Status::kIncomplete:
      return "incomplete";
    case AddResult::Status::kSkipped:
      return "skipped";
    case AddResult::Status::kDuplicate:
      return "duplicate";
  }
  return "?";
}

SeriesAssembler::SeriesAssembler(AssemblerOptions options) : options_(options) {}

AddResult SeriesAssembler::add(const fs::path& file) {
  try {
    const std::string ext = lower_extension(file);
    if (ext == ".par" || ext == ".rec") return add_par_rec(file);
    return add_dicom(file);
  } catch (const DicomIncomplete& e) {  // from a reader past the header (the pixels cut short)
    return with_status(AddResult::Status::kIncomplete, e.what());
  } catch (const std::bad_alloc& e) {  // GDCM's or ours: a volume too large for the memory left (or a memory limit)
    return with_status(
        AddResult::Status::kSkipped,
        fmt::format("{}: out of memory reading it or assembling its volume ({})", file.string(), e.what()));
  } catch (const std::exception& e) {  // the readers' errors name the file
    return with_status(AddResult::Status::kSkipped, e.what());
  }
}

SeriesAssembler::Series& SeriesAssembler::series_for(const std::string& uid, int number, int64_t index,
                                                     const std::string& instance) {
  auto it = series_.find(uid);
  if (it == series_.end()) {
    Series s;
    s.number = number;
    s.run = run_name(number, ++runs_by_number_[number]);
    return series_.emplace(uid, std::move(s)).first->second;
  }
  Series& s = it->second;
  const auto built = s.built.find(index);
  if (built != s.built.end() && built->second.count(instance) == 0) {  // volume `index` again, from other files
    s.built.clear();
    s.slices.clear();
    s.run = run_name(number, ++runs_by_number_[number]);
  }
  return s;
}

AddResult SeriesAssembler::emit(Series& series, int64_t index, std::set<std::string> instances, DicomVolume volume,
                                std::vector<fs::path> files) {
  series.built[index] = std::move(instances);
  AddResult r;
  AssembledVolume v;
  v.run = series.run;
  v.series_number = series.number;
  v.index = index;
  v.volume = std::move(volume);
  v.files = std::move(files);
  r.volumes.push_back(std::move(v));
  return r;
}

AddResult SeriesAssembler::add_dicom(const fs::path& file) {
  DicomHeader h;
  try {
    h = read_dicom_header(file);
  } catch (const DicomIncomplete& e) {
    return with_status(AddResult::Status::kIncomplete, e.what());
  }
  if (h.modality != "MR") {
    return with_status(AddResult::Status::kSkipped,
                       fmt::format("{}: modality '{}', not MR", file.string(), h.modality));
  }
  if (options_.series && h.series_number != *options_.series) {
    return with_status(AddResult::Status::kSkipped,
                       fmt::format("{}: series {}, not {}", file.string(), h.series_number, *options_.series));
  }
  const ScannerFormat layout = h.is_enhanced() ? ScannerFormat::kEnhanced
                               : h.is_mosaic() ? ScannerFormat::kSiemensMosaic
                                               : ScannerFormat::kGe;  // single-slice files, any vendor
  const bool single_slice_format = options_.format == ScannerFormat::kGe || options_.format == ScannerFormat::kPhilips;
  if (options_.format != ScannerFormat::kAuto && options_.format != layout &&
      !(layout == ScannerFormat::kGe && single_slice_format)) {
    return with_status(
        AddResult::Status::kSkipped,
        fmt::format("{}: a {} file, not --format {}", file.string(),
                    layout == ScannerFormat::kGe ? "single-slice" : to_string(layout), to_string(options_.format)));
  }
  const std::string& instance = h.sop_instance_uid;
  const auto duplicate = [&](const Series& s, int64_t index) {
    const auto b = s.built.find(index);
    if (b != s.built.end() && b->second.count(instance) > 0) return true;
    const auto w = s.slices.find(index);
    return w != s.slices.end() && w->second.count(instance) > 0;
  };
  const auto duplicate_result = [&](const Series& s, int64_t index) {
    return with_status(AddResult::Status::kDuplicate, fmt::format("{}: instance {} of {} volume {} seen before",
                                                                  file.string(), instance, s.run, index));
  };

  if (layout == ScannerFormat::kSiemensMosaic) {
    const int64_t index = std::max(h.instance_number, 1) - 1;  // real-time export: one instance per volume
    auto found = series_.find(h.series_instance_uid);
    if (found != series_.end() && duplicate(found->second, index)) return duplicate_result(found->second, index);
    DicomVolume volume = mosaic_volume(file, h);
    Series& s = series_for(h.series_instance_uid, h.series_number, index, instance);
    return emit(s, index, {instance}, std::move(volume), {file});
  }

  if (layout == ScannerFormat::kEnhanced) {
    std::vector<DicomVolume> volumes = enhanced_volumes(file, h);
    if (volumes.empty()) return with_status(AddResult::Status::kSkipped, file.string() + ": no frames");
    // One volume per file (real-time export): its InstanceNumber counts volumes; several: the file's own order.
    const int64_t first = volumes.size() == 1 ? std::max(h.instance_number, 1) - 1 : 0;
    auto found = series_.find(h.series_instance_uid);
    if (found != series_.end() && duplicate(found->second, first)) return duplicate_result(found->second, first);
    Series& s = series_for(h.series_instance_uid, h.series_number, first, instance);
    AddResult all;
    for (size_t k = 0; k < volumes.size(); ++k) {
      AddResult one = emit(s, first + static_cast<int64_t>(k), {instance}, std::move(volumes[k]), {file});
      all.volumes.push_back(std::move(one.volumes.front()));
    }
    return all;
  }

  const auto slot = slice_slot(h, options_.slices_per_volume);
  if (!slot) {
    return with_status(AddResult::Status::kSkipped,
                       file.string() +
                           ": a single-slice file that does not say how many slices make a volume "
                           "(no ImagesInAcquisition): give the count with --slices");
  }
  const auto [slices, index] = *slot;
  auto found = series_.find(h.series_instance_uid);
  if (found != series_.end() && duplicate(found->second, index)) return duplicate_result(found->second, index);
  Series& s = series_for(h.series_instance_uid, h.series_number, index, instance);
  auto& waiting = s.slices[index];
  waiting[instance] = file;
  if (static_cast<int>(waiting.size()) < slices) return {};
  std::set<std::string> instances;
  std::vector<fs::path> files;
  for (const auto& [uid, path] : waiting) {
    instances.insert(uid);
    files.push_back(path);
  }
  s.slices.erase(index);
  if (static_cast<int>(files.size()) > slices) {
    return with_status(AddResult::Status::kSkipped,
                       fmt::format("{} volume {}: {} slices arrived for {}; the volume is dropped", s.run, index,
                                   files.size(), slices));
  }
  DicomVolume volume = slice_stack_volume(files);
  return emit(s, index, std::move(instances), std::move(volume), std::move(files));
}

AddResult SeriesAssembler::add_par_rec(const fs::path& file) {
  if (options_.format != ScannerFormat::kAuto && options_.format != ScannerFormat::kPhilips) {
    return with_status(AddResult::Status::kSkipped,
                       fmt::format("{}: a PAR/REC file, not --format {}", file.string(), to_string(options_.format)));
  }
  ready_par_rec_halves_.insert(file);
  const bool is_par = lower_extension(file) == ".par";
  // The other half, in whichever case the console wrote it.
  fs::path par = file, rec = file;
  bool both = false;
  for (const char* other :
       is_par ? std::array<const char*, 2>{".rec", ".REC"} : std::array<const char*, 2>{".par", ".PAR"}) {
    fs::path candidate = file;
    candidate.replace_extension(other);
    if (ready_par_rec_halves_.count(candidate) > 0) {
      (is_par ? rec : par) = candidate;
      both = true;
    }
  }
  if (!both) return {};  // waits for its other half
  const int64_t index = std::max<int64_t>(trailing_number(par.stem().string()), 0);
  const std::string key = "par:" + par.parent_path().string();
  const std::string instance = par.filename().string();
  const int number = static_cast<int>(std::max<int64_t>(trailing_number(par.parent_path().filename().string()), 1));
  if (options_.series && number != *options_.series) {
    return with_status(AddResult::Status::kSkipped,
                       fmt::format("{}: series {}, not {}", file.string(), number, *options_.series));
  }
  auto found = series_.find(key);
  if (found != series_.end()) {
    const auto b = found->second.built.find(index);
    if (b != found->second.built.end() && b->second.count(instance) > 0) {
      return with_status(AddResult::Status::kDuplicate, fmt::format("{}: volume {} seen before", par.string(), index));
    }
  }
  DicomVolume volume;
  try {
    volume = par_rec_volume(par);
  } catch (const ParRecIncomplete& e) {
    ready_par_rec_halves_.erase(file);
    return with_status(AddResult::Status::kIncomplete, e.what());
  }
  ready_par_rec_halves_.erase(par);
  ready_par_rec_halves_.erase(rec);
  Series& s = series_for(key, number, index, instance);
  return emit(s, index, {instance}, std::move(volume), {par, rec});
}

std::vector<std::string> SeriesAssembler::waiting() const {
  std::vector<std::string> out;
  for (const auto& [uid, s] : series_) {
    for (const auto& [index, slices] : s.slices) {
      out.push_back(fmt::format("{} volume {}: {} slices so far", s.run, index, slices.size()));
    }
  }
  for (const auto& half : ready_par_rec_halves_) out.push_back(half.string() + ": waiting for its other half");
  return out;
}

}  // namespace rtf::dicom
