// Pipeline flags: registration, and the file + given-flags merge.
#include "cli/pipeline_flags.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "cli/option_checks.hpp"
#include "core/io/data_lookup.hpp"

namespace rtf::cli {

void add_pipeline_flags(CLI::App& cmd, PipelineFlags& f) {
  auto& v = f.values;
  cmd.add_option("--config", f.config_file, "Session file (TOML; examples/session.toml); the flags below override it")
      ->check(CLI::ExistingFile);
  cmd.add_option("--ring", v.ring, "Volumes kept on the device (at least the largest window)")
      ->check(CLI::Range(int64_t{2}, int64_t{100000}))
      ->capture_default_str();
  cmd.add_option("--tr", v.tr_s, "TR in seconds (default: the volumes' headers)")->check(rtf::cli::positive());
  cmd.add_option("--volumes", v.volumes, "Volumes per run (the design's length; needed for GLM and feedback)")
      ->check(rtf::cli::non_negative());
  cmd.add_option("--events", v.events, "BIDS events.tsv of the runs (design for GLM, CCA and feedback)")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--no-motion", f.no_motion, "No motion correction");
  cmd.add_option("--motion-ref", v.motion_reference,
                 "Motion reference: a volume index of each run, or a 3D NIfTI on the runs' grid")
      ->capture_default_str();
  cmd.add_option("--fwhm", v.smoothing_fwhm_mm, "Smoothing (mm) before the statistics; 0: off")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd.add_option("--contrast", v.contrasts, "NAME=EXPR over the design's columns (repeatable)");
  cmd.add_option("--glm-window", v.glm_window, "Sliding-window GLM length in volumes (0: off)")->capture_default_str();
  cmd.add_option("--cca-window", v.cca_window, "Sliding-window CCA length in volumes")->capture_default_str();
  cmd.add_option("--atlas", v.atlas, "ROI x ROI atlas: aal, a label NIfTI, or '' (off)")->capture_default_str();
  cmd.add_option("--atlas-transform", v.atlas_transform,
                 "ITK affine from the atlas's template space to the EPI's (rtfmri register EPI TEMPLATE --cost mi's "
                 "PREFIX_affine.txt): the atlas is pulled onto the EPI grid through its inverse")
      ->check(CLI::ExistingFile);
  cmd.add_option("--t1", v.t1,
                 "The subject's T1 (3D NIfTI): each run's reference EPI is registered to it (rigid, MI) and the T1 "
                 "normalised to --template at server start; the atlas and template-space ROIs are pulled onto the "
                 "EPI ([registration] t1; docs/live.md)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--template", v.template_name,
                 "Template of the atlas and ROIs: colin27, colin27-head, mni152 or a NIfTI; without --t1 the EPI is "
                 "registered to it directly (12 dof, MI) ([registration] template)");
  cmd.add_option("--normalization", v.normalization,
                 "PREFIX of an earlier `rtfmri normalize T1 --out PREFIX` (PREFIX_affine.txt, "
                 "PREFIX_inverse_warp.nii.gz): used instead of normalising --t1 live ([registration] normalization)");
  cmd.add_flag("--registration-affine-only", f.no_warp,
               "Normalise --t1 to the template with the affine only, no non-linear step ([registration] warp = false)");
  cmd.add_option("--feedback-roi", f.feedback_roi, "Feedback ROI as a sphere: x,y,z[,radius] in mm (see --roi-space)");
  cmd.add_option("--roi-space", f.roi_space,
                 "Space of --feedback-roi's centre: template (MNI; the default with --t1/--template/--normalization) "
                 "or epi (the EPI's world coordinates; the default otherwise)")
      ->check(CLI::IsMember({"template", "epi"}));
  cmd.add_option("--baseline", v.baseline_condition, "Baseline condition of the events (default: rest)");
  cmd.add_option("--results-pub", v.results_pub, "ZeroMQ PUB endpoint of the per-TR results ('' off)")
      ->capture_default_str();
  cmd.add_option("--feedback-tcp", v.feedback_tcp, "HOST:PORT of the feedback line server ('' off)")
      ->capture_default_str();
  cmd.add_option("--feedback-udp", v.feedback_udp, "HOST:PORT to send each feedback line to (repeatable)");
  cmd.add_flag("--no-outputs", f.no_outputs, "No PUB, TCP or UDP outputs");
}

stream::PipelineConfig pipeline_config_from(const PipelineFlags& f, const CLI::App& cmd) {
  stream::PipelineConfig c =
      f.config_file.empty() ? stream::PipelineConfig{} : stream::load_pipeline_config(f.config_file);
  const stream::PipelineConfig& o = f.values;
  auto given =
      [&](const char* flag) {  // flags a command does not register (e.g. replay has no --listen) count as not given
        const CLI::Option* option = cmd.get_option_no_throw(flag);
        return option != nullptr && option->count() > 0;
      };
  if (given("--listen")) c.listen = o.listen;
  if (given("--session-dir")) c.session_dir = o.session_dir;
  if (given("--session")) c.session = o.session;
  if (given("--fsync")) c.fsync = o.fsync;
  if (given("--ring")) c.ring = o.ring;
  if (given("--queue")) c.queue = o.queue;
  if (given("--max-open-runs")) c.max_open_runs = o.max_open_runs;
  if (given("--run-idle-close-s")) c.run_idle_close_s = o.run_idle_close_s;
  if (given("--max-volumes")) c.max_volumes = o.max_volumes;
  if (given("--exit-after-runs")) c.exit_after_runs = o.exit_after_runs;
  if (given("--max-live-runs")) c.max_live_runs = o.max_live_runs;
  if (given("--live-run-idle-s")) c.live_run_idle_s = o.live_run_idle_s;
  if (given("--tr")) c.tr_s = o.tr_s;
  if (given("--volumes")) c.volumes = o.volumes;
  if (given("--events")) c.events = o.events;
  if (given("--warm")) c.warm = o.warm;
  if (given("--motion-ref")) c.motion_reference = o.motion_reference;
  if (f.no_motion) c.motion = false;
  if (given("--fwhm")) c.smoothing_fwhm_mm = o.smoothing_fwhm_mm;
  if (given("--contrast")) c.contrasts = o.contrasts;
  if (given("--glm-window")) c.glm_window = o.glm_window;
  if (given("--cca-window")) c.cca_window = o.cca_window;
  if (given("--atlas")) c.atlas = o.atlas;
  if (given("--atlas-transform")) c.atlas_transform = o.atlas_transform;
  if (given("--t1")) c.t1 = o.t1;
  if (given("--template")) c.template_name = o.template_name;
  if (given("--normalization")) c.normalization = o.normalization;
  if (f.no_warp) c.normalization_warp = false;
  if (given("--feedback-roi")) {
    double x = 0, y = 0, z = 0, r = 8;
    if (std::sscanf(f.feedback_roi.c_str(), "%lf,%lf,%lf,%lf", &x, &y, &z, &r) < 3) {
      throw std::invalid_argument("--feedback-roi '" + f.feedback_roi + "': expected x,y,z[,radius] in mm");
    }
    stream::RoiSpec roi;
    roi.name = "roi";
    roi.sphere_mm = std::array<double, 3>{x, y, z};
    roi.radius_mm = r;
    if (f.roi_space == "template") roi.space = stream::RoiSpace::kTemplate;
    if (f.roi_space == "epi") roi.space = stream::RoiSpace::kEpi;
    c.feedback_rois = {roi};
  }
  if (given("--baseline")) c.baseline_condition = o.baseline_condition;
  if (given("--results-pub")) c.results_pub = o.results_pub;
  if (given("--feedback-tcp")) c.feedback_tcp = o.feedback_tcp;
  if (given("--feedback-udp")) c.feedback_udp = o.feedback_udp;
  if (f.no_outputs) {
    c.results_pub.clear();
    c.feedback_tcp.clear();
    c.feedback_udp.clear();
  }
  // Windows longer than the ring cannot be computed: shorten them to the ring, and say so.
  for (auto [name, window] : {std::pair<const char*, int64_t*>{"GLM", &c.glm_window},
                              {"CCA", &c.cca_window},
                              {"connectivity", &c.connectivity_window}}) {
    if (*window > c.ring) {
      spdlog::warn("{} window {} is longer than the ring ({}): using {}", name, *window, c.ring, c.ring);
      *window = c.ring;
    }
  }
  if (c.data_dir.empty()) {
    try {
      c.data_dir = find_installed_data("mricron/aal.nii.gz", executable_dir()).parent_path().parent_path();
    } catch (const std::exception&) {
      if (c.atlas == "aal") {
        spdlog::warn("the AAL atlas is not installed (scripts/fetch-data.sh): ROI x ROI connectivity off");
        c.atlas.clear();
      }
    }
  }
  return c;
}

}  // namespace rtf::cli
