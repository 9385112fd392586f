// Turning the complete files of a scanner's export folder into volumes as they arrive (issue 18), per series: a
// Siemens classic mosaic is a volume by itself; single-slice files (GE, Philips and Siemens classic DICOM) wait in
// their volume until it holds all its slices, whatever order they come in; an enhanced multi-frame file holds one or
// more volumes; a Philips PAR/REC pair is a volume once both halves are there. Each series becomes one run
// ("series-013"); a series that starts again (a volume index seen before arriving as another SOP instance) becomes a
// new run ("series-013-2"). Files that are not MR images, do not fit --format/--series, or cannot be decoded are
// skipped with a reason; a file that looks like DICOM but cannot be read yet (half-written) is reported incomplete so
// that the watcher can offer it again. Nothing here throws for a bad file; running out of memory (a volume too large
// for a memory limit) skips the file with a reason naming it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scanner/assemble/dicom_volume.hpp"

namespace rtf::dicom {

enum class ScannerFormat { kAuto, kSiemensMosaic, kEnhanced, kGe, kPhilips };

// "auto", "siemens-mosaic", "enhanced", "ge", "philips"; nullopt for anything else.
std::optional<ScannerFormat> scanner_format_from_string(std::string_view name);
std::string_view to_string(ScannerFormat format);

struct AssemblerOptions {
  ScannerFormat format = ScannerFormat::kAuto;
  std::optional<int> series;  // only files of this SeriesNumber
  int slices_per_volume = 0;  // single-slice files: slices in a volume when the headers do not say (0: from them)
};

struct AssembledVolume {
  std::string run;  // "series-013", or "series-013-2" for the second start of series 13
  int series_number = 0;
  std::string series_uid;
  int64_t index = 0;  // 0-based volume index within the run
  DicomVolume volume;
  std::vector<std::filesystem::path> files;  // the files it was built from
};

struct AddResult {
  enum class Status {
    kUsed,        // the file completed one or more volumes (in `volumes`) or joined a volume still waiting
    kIncomplete,  // looks like a scanner file but cannot be read yet: offer it again when it has changed
    kSkipped,     // never usable (not DICOM, not MR, another series or format, undecodable, inconsistent)
    kDuplicate,   // the same instance again (a file rewritten in place or copied twice): ignored
  };
  Status status = Status::kUsed;
  std::string reason;  // why, for every status other than kUsed
  std::vector<AssembledVolume> volumes;
};

std::string_view to_string(AddResult::Status status);

class SeriesAssembler {
 public:
  explicit SeriesAssembler(AssemblerOptions options = {});

  // Takes one file the watcher says is complete. Never throws for the file's content.
  AddResult add(const std::filesystem::path& file);

  // Volumes still waiting for files, e.g. "series-006 volume 3: 17 of 18 slices".
  std::vector<std::string> waiting() const;

 private:
  struct Series {
    int number = 0;
    std::string run;                                 // this start's run id
    std::map<int64_t, std::set<std::string>> built;  // index -> SOP instance UIDs of the volume sent for it
    // Single-slice volumes still waiting: index -> (SOP instance UID -> file).
    std::map<int64_t, std::map<std::string, std::filesystem::path>> slices;
  };

  AddResult add_dicom(const std::filesystem::path& file);
  AddResult add_par_rec(const std::filesystem::path& file);
  // The series' state for an instance of volume `index`: a new run when that volume was already built from other
  // instances (the series started again).
  Series& series_for(const std::string& uid, int number, int64_t index, const std::string& instance);
  AddResult emit(Series& series, int64_t index, std::set<std::string> instances, DicomVolume volume,
                 std::vector<std::filesystem::path> files);

  AssemblerOptions options_;
  std::map<std::string, Series> series_;                  // by SeriesInstanceUID (or the PAR file's folder)
  std::map<int, int> runs_by_number_;                     // series number -> runs started for it
  std::set<std::filesystem::path> ready_par_rec_halves_;  // .par/.rec files reported complete
};

}  // namespace rtf::dicom
