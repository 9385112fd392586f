// `rtfmri sim dicom FILE --out DIR --vendor siemens-mosaic|ge|enhanced`: write a 3D/4D NIfTI as a scanner console
// exports DICOM, one volume per TR (or N times faster), for testing `rtfmri scanner watch` without a scanner
// (sim/dicom/dicom_series_sim.hpp). Ctrl-C stops after the file being written.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>
#include <optional>

#include "cli/cli_support.hpp"
#include "cli/command_registry.hpp"
#include "cli/option_checks.hpp"
#include "core/io/nifti_io.hpp"
#include "sim/dicom/dicom_series_sim.hpp"
#include "sim/dicom/slice_timing.hpp"

namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void request_stop(int /*signal*/) {
  g_stop_requested = 1;
}

// The DICOM writers refuse a volume whose voxels are not exact integers in the int16/uint16 range, but only when they
// reach it: the volumes to write (first, first + count) are checked here first, so that a bad late volume leaves no
// earlier files (or folder) behind.
void check_exact_integers(const rtf::Image& image, int64_t first, int64_t count, const std::string& file) {
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

struct DicomCli {
  std::string file, vendor = "siemens-mosaic", slice_order = "none";
  rtf::sim::DicomSimOptions options;
};

void run(DicomCli& c) {
  auto& o = c.options;
  o.vendor = rtf::sim::parse_dicom_vendor(c.vendor);
  const rtf::Image image = rtf::read_nifti(c.file);
  check_exact_integers(image, o.start, o.count, c.file);
  const double tr_s = o.tr_s > 0 ? o.tr_s : image.header().tr_s;
  std::optional<std::vector<double>> from_file = rtf::sim::nifti_slice_timing(c.file, image.nz());
  if (!from_file) from_file = rtf::sim::bids_slice_timing(c.file, image.nz(), tr_s);
  if (from_file) {
    o.slice_timing_s = *from_file;
    if (c.slice_order != "none") {
      fmt::print("slice times from the file's slice_code or BIDS sidecar; --slice-order ignored\n");
    }
  } else {
    o.slice_timing_s = rtf::sim::slice_timing(rtf::sim::parse_slice_order(c.slice_order), image.nz(), tr_s);
  }
  g_stop_requested = 0;
  const auto previous_int = std::signal(SIGINT, request_stop);
  const auto previous_term = std::signal(SIGTERM, request_stop);
  o.stop = [] { return g_stop_requested != 0; };
  o.on_volume = [](const rtf::sim::DicomSimVolume& v) {
    fmt::print("volume {}/{} at {:.2f} s: {}{}\n", v.index + 1, v.total, v.seconds, v.files.front().string(),
               v.files.size() > 1 ? fmt::format(" (+{} files)", v.files.size() - 1) : "");
    std::fflush(stdout);
  };
  rtf::sim::DicomSimReport r;
  try {
    r = rtf::sim::simulate_dicom_series(image, o);
  } catch (...) {
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    throw;
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  fmt::print("{} {} volumes ({} files) in {:.2f} s into {}; series {} UID {}; slice times {}\n",
             r.stopped ? "stopped after" : "wrote", r.volumes, r.files, r.seconds, o.out.string(), o.series_number,
             r.series_instance_uid, o.slice_timing_s.empty() ? "none" : (from_file ? "from the file" : c.slice_order));
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<DicomCli>();
  auto& o = c->options;
  auto* cmd = rtf::cli::sim_group(app).add_subcommand(
      "dicom",
      "Write a 3D/4D NIfTI into a folder as a scanner console exports DICOM, one volume per TR (for `rtfmri scanner "
      "watch`)");
  cmd->footer(
      "Files: siemens-mosaic DIR/001_SSSSSS_VVVVVV.dcm (one mosaic per volume, Siemens real-time export); ge "
      "DIR/sS/iNNNNNNN.MRDC.N (one file per slice, N = InstanceNumber); enhanced DIR/001_SSSSSS_VVVVVV.dcm (one "
      "multi-frame file per volume). Volume i appears i + 1 TRs after the start. Voxels must be integers in the int16 "
      "or "
      "uint16 range (written exactly). Slice times come from the file's slice_code/slice_duration when set, else from "
      "its BIDS sidecar's SliceTiming (FILE.json beside FILE.nii[.gz]), else from "
      "--slice-order spread evenly over the TR. Ctrl-C finishes the file (GE: the volume) being written and stops; in "
      "place, a hard kill mid-write can leave a truncated file, with --atomic only a hidden .tmp file.");
  cmd->add_option("FILE", c->file, "3D or 4D NIfTI (.nii or .nii.gz)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o.out, "Output folder (created)")->required();
  cmd->add_option("--vendor", c->vendor, "File layout")
      ->check(CLI::IsMember({"siemens-mosaic", "ge", "enhanced"}))
      ->capture_default_str();
  cmd->add_option("--tr", o.tr_s, "TR in seconds (default: the file's pixdim[4])")->check(rtf::cli::positive());
  cmd->add_option("--speed", o.speed, "Times faster than real time; 0: as fast as possible")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--series", o.series_number, "Series number (in file names and SeriesNumber)")
      ->check(CLI::Range(1, 999999))
      ->capture_default_str();
  cmd->add_option("--series-uid", o.series_instance_uid, "SeriesInstanceUID (default: a fresh 2.25 UID)");
  cmd->add_flag("--atomic", o.atomic,
                "Write each file under a hidden temporary name and rename it when complete (default: in place, as a "
                "console does)");
  cmd->add_option("--start", o.start, "First volume of the file to write; it becomes volume 1 of the series")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--count", o.count, "Number of volumes to write (default: to the end)")->check(rtf::cli::positive());
  cmd->add_option("--slice-order", c->slice_order,
                  "Slice acquisition order where the file has no slice_code: none (no slice times written), ascending, "
                  "descending, interleaved (0, 2, 4, ..., 1, 3, ...) or siemens-interleaved (even slice counts start "
                  "with slice 1)")
      ->check(CLI::IsMember({"none", "ascending", "descending", "interleaved", "siemens-interleaved"}))
      ->capture_default_str();
  cmd->callback([c] { run(*c); });
}

RTF_REGISTER_COMMAND(83, setup);

}  // namespace
