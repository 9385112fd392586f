// PipelineConfig: everything `rtfmri run` does with a session, from one TOML file (examples/session.toml explains
// every key) with command-line flags overriding it: the server, what a run looks like (TR, length, events), and each
// stage (motion, smoothing, GLM, CCA, connectivity, feedback) and output (results PUB, feedback TCP, UDP).
// docs/live.md.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/feedback/feedback_config.hpp"

namespace rtf::stream {

// A region: a sphere (world mm), a mask NIfTI on the EPI grid, or an atlas region by name.
struct RoiSpec {
  std::string name;
  std::optional<std::array<double, 3>> sphere_mm;
  double radius_mm = 8.0;
  std::string mask;          // path
  std::string atlas_region;  // e.g. "Precentral_L" of the connectivity atlas
};

struct PipelineConfig {
  // [server]
  std::string listen = "tcp://127.0.0.1:5555";
  std::string session_dir;
  std::string session;
  std::string fsync = "every-volume";
  int64_t ring = 128;  // device ring: at least the largest window
  size_t queue = 64;   // recorded volumes waiting for the device stage (drop-oldest beyond)
  int64_t max_volumes = 100000;
  int64_t exit_after_runs = 0;
  // [run]: what every run of the session looks like (the design needs it)
  double tr_s = 0.0;    // 0: from the volumes' headers
  int64_t volumes = 0;  // the run's length; 0: no design (no GLM, no PSC feedback)
  std::string events;   // BIDS events.tsv
  // The runs' grid when known before the first volume ("64x64x33@3", "64x64x33@3x3x3.5" in mm, or a NIfTI on that
  // grid such as a previous run's bold.nii.gz): the server builds every kernel before it listens (stream/pipeline/
  // warm_up.hpp), so that no TR is lost to compilation. "": the first volume's arrival builds them.
  std::string warm;
  // [motion]
  bool motion = true;
  std::string motion_reference = "0";
  // [smoothing]
  double smoothing_fwhm_mm = 6.0;  // 0: off
  // [glm]
  bool glm_cumulative = true;
  int64_t glm_window = 30;  // sliding window; 0: off
  double glm_ar1 = 0.0;
  double glm_highpass_s = 128.0;
  bool glm_motion_regressors = true;
  std::vector<std::string> contrasts;  // NAME=EXPR; default: each condition against baseline
  std::string published_map;           // contrast whose cumulative t-map is published; default: the first
  // [cca]
  bool cca = true;
  int64_t cca_window = 30;
  double cca_period_s = 0.0;  // sine/cosine period; 0: from the events (the mean cycle of the first condition)
  // [connectivity]
  std::string atlas = "aal";  // "aal" (from the data directory), a label NIfTI, or "" (off)
  std::string atlas_names;    // names file for a label NIfTI atlas
  // ITK affine mapping the atlas's (template's) space to the EPI's (rtfmri register EPI TEMPLATE's PREFIX_affine.txt):
  // the atlas, and ROIs named by atlas region, are pulled onto the EPI grid through its inverse. "" = same space.
  std::string atlas_transform;
  int64_t connectivity_window = 30;
  std::optional<RoiSpec> seed;
  // [feedback]
  bool feedback = true;
  FeedbackMode feedback_mode = FeedbackMode::kRoiPsc;
  FeedbackProtocol feedback_protocol = FeedbackProtocol::kContinuous;
  std::vector<RoiSpec> feedback_rois;
  std::string baseline_condition;
  double hrf_delay_s = 5.0;
  bool kalman = true;
  bool scaling = false;
  // [outputs]
  std::string results_pub = "tcp://127.0.0.1:5556";  // "" off
  std::string feedback_tcp = "127.0.0.1:5557";       // "" off
  std::vector<std::string> feedback_udp;             // HOST:PORT each
  // Paths in the file are relative to the file's folder; this is where data (AAL) are looked up.
  std::filesystem::path data_dir;
};

// Every stage and output off (upload into the ring only): a base for tests, benchmarks and ingest-only servers.
PipelineConfig upload_only_config(const std::filesystem::path& session_dir, int64_t ring = 64);

// Reads a TOML file. Unknown keys and wrong types are errors naming the key (a typo must not be silently ignored).
PipelineConfig load_pipeline_config(const std::filesystem::path& path);
PipelineConfig parse_pipeline_config(std::string_view toml_text, const std::filesystem::path& base_dir = {});

// Throws std::invalid_argument naming the first inconsistent setting (e.g. a window larger than the ring).
void validate(const PipelineConfig& config);

FeedbackMode parse_feedback_mode(const std::string& name);          // roi-psc, differential, connectivity
FeedbackProtocol parse_feedback_protocol(const std::string& name);  // continuous, intermittent

}  // namespace rtf::stream
