// `rtfmri sim dicom FILE --out DIR --vendor siemens-mosaic|ge|enhanced`: write a 3D/4D NIfTI as a scanner console
// exports DICOM, one volume per TR (or N times faster), for testing `rtfmri scanner watch` without a scanner
// (sim/dicom/dicom_series_sim.hpp). Ctrl-C stops after the file being written.
#include <memory>

#include "cli/command_support.hpp"
#include "sim/dicom/dicom_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<rtf::sim::DicomCommandOptions>();
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
  cmd->callback([c] { rtf::sim::run_dicom_command(*c); });
}

RTF_REGISTER_COMMAND(83, setup);

}  // namespace
