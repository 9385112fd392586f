// PipelineConfig: everything `rtfmri run` does with a session, from one TOML file (examples/session.toml explains
// every key) with command-line flags overriding it: the server, what a run looks like (TR, length, events), the
// subject's anatomy for subject-space ROIs ([registration]), each stage (motion, smoothing, GLM, CCA, connectivity,
// feedback) and output (results PUB, feedback TCP, UDP). docs/live.md.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/feedback/feedback_config.hpp"
#include "core/qa/live_qa.hpp"

namespace rtf::stream {

// Where a sphere's centre or a mask lives. kTemplate: the atlas's template (MNI) space, reached through the subject's
// registration ([registration]) or [connectivity] atlas_transform, else taken as the EPI's world (the two are then
// assumed to be one space). kEpi: the EPI's own world (scanner) space; a mask must then be on the EPI grid. kAuto:
// kTemplate when [registration] is on, else kEpi (the behaviour of session files older than [registration]).
enum class RoiSpace { kAuto, kEpi, kTemplate };

// A region: a sphere (mm), a mask NIfTI, or an atlas region by name (always in the atlas's space).
struct RoiSpec {
  std::string name;
  std::optional<std::array<double, 3>> sphere_mm;
  double radius_mm = 8.0;
  std::string mask;          // path
  std::string atlas_region;  // e.g. "Precentral_L" of the connectivity atlas
  RoiSpace space = RoiSpace::kAuto;
};

struct PipelineConfig {
  // [server]
  std::string listen = "tcp://127.0.0.1:5555";
  std::string session_dir;
  std::string session;
  std::string fsync = "every-volume";
  int64_t ring = 128;  // device ring: at least the largest window
  size_t queue = 64;   // recorded volumes waiting for the device stage (drop-oldest beyond)
  // Runs whose session files are open at once (two descriptors each; the least recently used close first), and the
  // seconds without a volume after which a run's files close (0: never); both reopen on demand. docs/recording.md.
  size_t max_open_runs = 32;
  double run_idle_close_s = 60.0;
  int64_t max_volumes = 100000;
  int64_t exit_after_runs = 0;
  // Runs analysed on the device at once (each has its own pipeline); a run that starts while that many are being
  // analysed is recorded only (replay analyses it afterwards). A run with no volume for live_run_idle_s, or closed by
  // its end_of_run, gives its place to a new run. docs/live.md ("Several runs at once").
  int64_t max_live_runs = 2;
  double live_run_idle_s = 60.0;
  // [run]: what every run of the session looks like (the design needs it)
  double tr_s = 0.0;    // 0: from the volumes' headers
  int64_t volumes = 0;  // the run's length; 0: no design (no GLM, no PSC feedback)
  std::string events;   // BIDS events.tsv
  // The runs' grid when known before the first volume ("64x64x33@3", "64x64x33@3x3x3.5" in mm, or a NIfTI on that
  // grid such as a previous run's bold.nii.gz): the server builds every kernel before it listens (stream/pipeline/
  // warm_up.hpp), so that no TR is lost to compilation. "": the first volume's arrival builds them.
  std::string warm;
  // [registration]: subject-space ROIs (docs/live.md). On when any of t1, template or normalization is set: the runs'
  // reference EPI is registered to the T1 (6 dof, MI) and the T1 normalised to the template at server start, or
  // without a T1 the EPI registered to the template (12 dof, MI); the atlas and template-space ROIs are then pulled
  // onto each run's grid, beside the run, and ROI outputs start when they are ready.
  std::string t1;                    // the subject's T1 (3D NIfTI)
  std::string template_name;         // colin27 | colin27-head | mni152 | PATH; "" with registration on: colin27
  std::string normalization;         // PREFIX of an earlier `rtfmri normalize T1 --out PREFIX` (needs t1)
  bool normalization_warp = true;    // false: T1 -> template affine only (no non-linear step)
  std::string epi_levels;            // "SPACING:FWHM,..." of the EPI registration; "": its default (8:8,4:4,2:2)
  std::string normalization_levels;  // "SPACING:ITERATIONS,..." of the non-linear step; "": its default
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
  // [qa]: the live data-quality stage (docs/algorithms/qa.md, "Live"): measures, FIRMM's tally, alarms, and the
  // run's qa files (qa.tsv, qa.json, maps, qa_report.html) in runs/<run>/ when it ends.
  bool qa = true;
  std::string qa_mask;  // a brain mask on the EPI grid; "": the brain mask of each run's first volume
  LiveQaOptions qa_options;
  // [decoder]: a linear decoder applied to every volume (docs/algorithms/decoding.md "Live"): the model file
  // (rtfmri decode's PREFIX_model.json, or examples/export_sklearn_decoder.py's); every feedback line carries its
  // decision, probabilities and status. "": off.
  std::string decoder_model;
  // The feedback value from the decoder instead of the ROIs: "probability" (of decoder_target) or "decision" (its
  // decision value; for two classes positive towards the target), averaged over the last decoder_average_volumes
  // volumes (continuous) or over a regulation block's last ones, given at its end ([feedback] protocol intermittent,
  // with hrf_delay_s and baseline). "": the [feedback] stage's value. decoder_target "": the model's positive class
  // (classes[1]) for two classes; required for more.
  std::string decoder_feedback, decoder_target;
  int64_t decoder_average_volumes = 1;
  // [outputs]
  std::string results_pub = "tcp://127.0.0.1:5556";  // "" off
  std::string feedback_tcp = "127.0.0.1:5557";       // "" off
  std::vector<std::string> feedback_udp;             // HOST:PORT each
  // Paths in the file are relative to the file's folder; this is where data (AAL) are looked up.
  std::filesystem::path data_dir;

  bool registration() const { return !t1.empty() || !template_name.empty() || !normalization.empty(); }
  // The space a region is in, kAuto resolved.
  RoiSpace space_of(const RoiSpec& roi) const;
};

// Every stage and output off (upload into the ring only): a base for tests, benchmarks and ingest-only servers.
PipelineConfig upload_only_config(const std::filesystem::path& session_dir, int64_t ring = 64);

// Reads a TOML file. Unknown keys and wrong types are errors naming the key (a typo must not be silently ignored).
PipelineConfig load_pipeline_config(const std::filesystem::path& path);
PipelineConfig parse_pipeline_config(std::string_view toml_text, const std::filesystem::path& base_dir = {});

// Throws std::invalid_argument naming the first inconsistent setting (e.g. a window larger than the ring).
void validate(const PipelineConfig& config);

// Whether [motion] reference names a volume index of each run (digits only), not a NIfTI file.
bool motion_reference_is_index(const std::string& reference);

// Throws std::invalid_argument with a clear message for [registration] inputs that cannot work, checked before any
// socket is bound: a T1 that is missing or not 3D, a template that is neither a known name nor a file, a normalization
// PREFIX without its files. Reads headers only.
void check_registration_inputs(const PipelineConfig& config);
// The template's path: colin27 (and colin27-head) from config.data_dir first, then rtf::resolve_template's places.
std::filesystem::path registration_template_path(const PipelineConfig& config);

FeedbackMode parse_feedback_mode(const std::string& name);          // roi-psc, differential, connectivity
FeedbackProtocol parse_feedback_protocol(const std::string& name);  // continuous, intermittent

}  // namespace rtf::stream
