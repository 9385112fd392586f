// `rtfmri sim dicom`'s work (sim/dicom/dicom_command.hpp).
#include "sim/dicom/dicom_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "sim/dicom/slice_timing.hpp"

namespace rtf::sim {
namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void request_stop(int /*signal*/) {
  g_stop_requested = 1;
}

// The DICOM writers refuse a volume whose voxels are not exact integers in the int16/uint16 range, but only when they
// reach it: the volumes to write (first, first + count) are checked here first, so that a bad late volume leaves no
// earlier files (or folder) behind.
void check_exact_integers(const Image& image, int64_t first, int64_t count, const std::string& file) {
  const std::vector<float>& v = image.data();
  const auto per_volume = static_cast<size_t>(image.nx() * image.ny() * image.nz());
  const int64_t end = count < 0 ? image.nt() : std::min(image.nt(), first + count);
  for (int64_t t = std::max<int64_t>(first, 0); t < end; ++t) {
    const size_t start = static_cast<size_t>(t) * per_volume;
    double low = v[start], high = v[start];
    for (size_t i = start; i < start + per_volume; ++i) {
      const double x = v[i];
      if (!std::isfinite(x) || x != std::nearbyint(x) || x < -32768.0 || x > 65535.0) {
        const size_t at = i - start;
        const auto nx = static_cast<size_t>(image.nx()), ny = static_cast<size_t>(image.ny());
        throw std::invalid_argument(fmt::format(
            "{}: volume {}, voxel ({}, {}, {}) = {} is not an integer in the int16/uint16 range; the DICOM writers "
            "store exact integers only (round or rescale the image first); nothing written",
            file, t, at % nx, (at / nx) % ny, at / (nx * ny), x));
      }
      low = std::min(low, x);
      high = std::max(high, x);
    }
    if (low < 0.0 && high > 32767.0) {
      throw std::invalid_argument(
          fmt::format("{}: volume {} has values from {} to {}, which fit neither int16 nor uint16; nothing written",
                      file, t, low, high));
    }
  }
}

// The series written with Ctrl-C (and SIGTERM) asking it to stop after the file being written; the handlers there
// before are back when it returns or throws.
DicomSimReport simulate_until_stopped(const Image& image, DicomSimOptions& o) {
  g_stop_requested = 0;
  const auto previous_int = std::signal(SIGINT, request_stop);
  const auto previous_term = std::signal(SIGTERM, request_stop);
  o.stop = [] { return g_stop_requested != 0; };
  o.on_volume = [](const DicomSimVolume& v) {
    fmt::print("volume {}/{} at {:.2f} s: {}{}\n", v.index + 1, v.total, v.seconds, v.files.front().string(),
               v.files.size() > 1 ? fmt::format(" (+{} files)", v.files.size() - 1) : "");
    std::fflush(stdout);
  };
  DicomSimReport r;
  try {
    r = simulate_dicom_series(image, o);
  } catch (...) {
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    throw;
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  return r;
}

}  // namespace

void run_dicom_command(const DicomCommandOptions& c) {
  DicomSimOptions o = c.options;
  o.vendor = parse_dicom_vendor(c.vendor);
  const Image image = read_nifti(c.file);
  check_exact_integers(image, o.start, o.count, c.file);
  const double tr_s = o.tr_s > 0 ? o.tr_s : image.header().tr_s;
  std::optional<std::vector<double>> from_file = nifti_slice_timing(c.file, image.nz());
  if (!from_file) from_file = bids_slice_timing(c.file, image.nz(), tr_s);
  if (from_file) {
    o.slice_timing_s = *from_file;
    if (c.slice_order != "none") {
      fmt::print("slice times from the file's slice_code or BIDS sidecar; --slice-order ignored\n");
    }
  } else {
    o.slice_timing_s = slice_timing(parse_slice_order(c.slice_order), image.nz(), tr_s);
  }
  const DicomSimReport r = simulate_until_stopped(image, o);
  fmt::print("{} {} volumes ({} files) in {:.2f} s into {}; series {} UID {}; slice times {}\n",
             r.stopped ? "stopped after" : "wrote", r.volumes, r.files, r.seconds, o.out.string(), o.series_number,
             r.series_instance_uid, o.slice_timing_s.empty() ? "none" : (from_file ? "from the file" : c.slice_order));
}

}  // namespace rtf::sim
