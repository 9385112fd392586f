// Options checked, one DicomWriteSeries for the run, then per volume: wait for its time (polling `stop`), write its
// files (in place or through a hidden temporary name), report it.
#include "sim/dicom/dicom_series_sim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>

#include "scanner/dicom/dicom_write_series.hpp"
#include "scanner/dicom/dicom_writer.hpp"

#if __has_include("scanner/dicom/enhanced_writer.hpp")
#include "scanner/dicom/enhanced_writer.hpp"
#define RTF_HAVE_ENHANCED_WRITER 1
#else
#define RTF_HAVE_ENHANCED_WRITER 0
#endif

namespace rtf::sim {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// "2.25." and a random 128-bit number in decimal: a UUID-derived UID (DICOM PS3.5 B.2).
std::string fresh_uid() {
  std::random_device device;
  std::array<uint64_t, 4> limbs{};  // a 128-bit number, 32 bits per limb, most significant first
  for (uint64_t& limb : limbs) limb = device();
  std::string digits;
  while (std::any_of(limbs.begin(), limbs.end(), [](uint64_t l) { return l != 0; })) {
    uint64_t remainder = 0;
    for (uint64_t& limb : limbs) {  // long division by 10
      const uint64_t value = (remainder << 32) | limb;
      limb = value / 10;
      remainder = value % 10;
    }
    digits.insert(digits.begin(), static_cast<char>('0' + remainder));
  }
  return "2.25." + (digits.empty() ? std::string("0") : digits);
}

// A file written either in place or under ".NAME.tmp" beside it and renamed; the temporary is removed on failure.
void write_one(const fs::path& file, bool atomic, const std::function<void(const fs::path&)>& write) {
  if (!atomic) {
    write(file);
    return;
  }
  const fs::path temporary = file.parent_path() / ("." + file.filename().string() + ".tmp");
  try {
    write(temporary);
    fs::rename(temporary, file);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

// Waits until `deadline`, polling `stop` every 20 ms; false when stopped.
bool wait_until(Clock::time_point deadline, const std::function<bool()>& stop) {
  while (Clock::now() < deadline) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(20)));
  }
  return !(stop && stop());
}

}  // namespace

DicomVendor parse_dicom_vendor(std::string_view name) {
  if (name == "siemens-mosaic") return DicomVendor::kSiemensMosaic;
  if (name == "ge") return DicomVendor::kGe;
  if (name == "enhanced") return DicomVendor::kEnhanced;
  throw std::invalid_argument(fmt::format("vendor '{}': expected siemens-mosaic, ge or enhanced", name));
}

std::string_view to_string(DicomVendor vendor) {
  switch (vendor) {
    case DicomVendor::kSiemensMosaic:
      return "siemens-mosaic";
    case DicomVendor::kGe:
      return "ge";
    case DicomVendor::kEnhanced:
      return "enhanced";
  }
  return "?";
}

bool enhanced_dicom_available() {
  return RTF_HAVE_ENHANCED_WRITER != 0;
}

std::vector<fs::path> dicom_file_names(DicomVendor vendor, int series_number, int64_t index, int64_t nz) {
  if (vendor != DicomVendor::kGe) return {fmt::format("001_{:06}_{:06}.dcm", series_number, index + 1)};
  std::vector<fs::path> files;
  const fs::path folder = fmt::format("s{}", series_number);
  for (int64_t k = 0; k < nz; ++k) {
    const int64_t instance = index * nz + k + 1;
    files.push_back(folder / fmt::format("i{:07}.MRDC.{}", instance, instance));
  }
  return files;
}

DicomSimReport simulate_dicom_series(const Image& image, const DicomSimOptions& o) {
  const double tr_s = o.tr_s > 0 ? o.tr_s : image.header().tr_s;
  if (!(tr_s > 0)) throw std::invalid_argument("no TR: the image's pixdim[4] is 0 (give --tr)");
  if (o.speed < 0) throw std::invalid_argument(fmt::format("speed {} is negative", o.speed));
  if (o.start < 0 || o.start >= image.nt()) {
    throw std::invalid_argument(fmt::format("start volume {} is outside the image's {} volumes", o.start, image.nt()));
  }
  const int64_t available = image.nt() - o.start;
  const int64_t count = o.count < 0 ? available : std::min(o.count, available);
  if (o.vendor == DicomVendor::kEnhanced && !enhanced_dicom_available()) {
    throw std::invalid_argument(
        "vendor enhanced: this build has no enhanced DICOM writer (scanner/dicom/enhanced_writer)");
  }
  if (!o.slice_timing_s.empty() && static_cast<int64_t>(o.slice_timing_s.size()) != image.nz()) {
    throw std::invalid_argument(fmt::format("{} slice times for {} slices", o.slice_timing_s.size(), image.nz()));
  }
  dicom::DicomWriteSeries series;
  series.series_instance_uid = o.series_instance_uid.empty() ? fresh_uid() : o.series_instance_uid;
  series.series_number = o.series_number;
  series.tr_s = tr_s;
  series.slice_timing_s = o.slice_timing_s;

  DicomSimReport report;
  report.series_instance_uid = series.series_instance_uid;
  const Clock::time_point begin = Clock::now();
  const auto since_begin = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
  for (int64_t i = 0; i < count; ++i) {
    const auto due = begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                 o.speed > 0 ? static_cast<double>(i + 1) * tr_s / o.speed : 0.0));
    if (!wait_until(due, o.stop)) {
      report.stopped = true;
      break;
    }
    const Image volume = image.extract_volume(o.start + i);
    std::vector<fs::path> files = dicom_file_names(o.vendor, o.series_number, i, image.nz());
    for (fs::path& f : files) f = o.out / f;
    fs::create_directories(files.front().parent_path());
    switch (o.vendor) {
      case DicomVendor::kSiemensMosaic:
        write_one(files.front(), o.atomic,
                  [&](const fs::path& f) { dicom::write_mosaic_volume(volume, series, i, f); });
        break;
      case DicomVendor::kGe:
        for (int64_t k = 0; k < image.nz(); ++k) {  // one file per slice, as the console sends them
          write_one(files[static_cast<size_t>(k)], o.atomic,
                    [&](const fs::path& f) { dicom::write_slice_file(volume, series, i, k, f); });
        }
        break;
      case DicomVendor::kEnhanced:
#if RTF_HAVE_ENHANCED_WRITER
        write_one(files.front(), o.atomic,
                  [&](const fs::path& f) { dicom::write_enhanced_volume(volume, series, i, f); });
#endif
        break;
    }
    ++report.volumes;
    report.files += static_cast<int64_t>(files.size());
    if (o.on_volume) o.on_volume({i, count, since_begin(), files});
  }
  report.seconds = since_begin();
  return report;
}

}  // namespace rtf::sim
