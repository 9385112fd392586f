// The session file: every section and key of examples/session.toml parses into PipelineConfig with relative paths
// resolved against the file's folder; typos and wrong types are errors that name the key; validation catches
// inconsistent settings.
#include <gtest/gtest.h>

#include <cmath>

#include "stream/pipeline/pipeline_config.hpp"
#include "tests/support/data_paths.hpp"

namespace rtf::stream {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_pipeline_config(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(PipelineConfig, TheExampleSessionFileParses) {
  const auto path = std::filesystem::path(RTF_TEST_DATA_DIR).parent_path().parent_path() / "examples" / "session.toml";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const PipelineConfig c = load_pipeline_config(path);
  EXPECT_EQ(c.listen, "tcp://127.0.0.1:5555");
  EXPECT_EQ(std::filesystem::path(c.session_dir), path.parent_path() / "sessions" / "sub-01");  // relative to the file
  EXPECT_GT(c.ring, 0);
  EXPECT_FALSE(c.feedback_rois.empty());
  EXPECT_TRUE(c.feedback_rois[0].sphere_mm.has_value());
  EXPECT_NO_THROW(validate(c));
}

TEST(PipelineConfig, KeysAndTypes) {
  const PipelineConfig c = parse_pipeline_config(R"(
[server]
session_dir = "/data/s1"
ring = 40
[run]
tr = 2
volumes = 120
events = "events.tsv"
warm = "64x64x33@3"
[motion]
reference = 5
[glm]
sliding_window = 25
contrasts = ["task=task", "eff=task; task"]
[connectivity]
atlas = ""
seed = { sphere_mm = [0, -52, 26], radius_mm = 6 }
[feedback]
mode = "differential"
rois = [ { sphere_mm = [-38, -24, 56] }, { mask = "b.nii.gz", name = "B" } ]
[outputs]
feedback_udp = ["127.0.0.1:7000"]
)",
                                                 "/base");
  EXPECT_EQ(c.ring, 40);
  EXPECT_DOUBLE_EQ(c.tr_s, 2.0);  // an integer where a number is expected is fine
  EXPECT_EQ(c.events, "/base/events.tsv");
  EXPECT_EQ(c.warm, "64x64x33@3");  // a grid spec stays as it is; a file name is relative to the session file
  EXPECT_EQ(parse_pipeline_config("[run]\nwarm = \"runs/bold.nii.gz\"\n", "/base").warm, "/base/runs/bold.nii.gz");
  EXPECT_EQ(
      parse_pipeline_config("[connectivity]\natlas_transform = \"epi2mni_affine.txt\"\n", "/base").atlas_transform,
      "/base/epi2mni_affine.txt");
  EXPECT_EQ(c.motion_reference, "5");
  EXPECT_EQ(c.contrasts.size(), 2u);
  EXPECT_TRUE(c.atlas.empty());
  ASSERT_TRUE(c.seed.has_value());
  EXPECT_DOUBLE_EQ(c.seed->radius_mm, 6.0);
  EXPECT_EQ(c.feedback_mode, FeedbackMode::kDifferentialPsc);
  ASSERT_EQ(c.feedback_rois.size(), 2u);
  EXPECT_EQ(c.feedback_rois[1].mask, "/base/b.nii.gz");
  EXPECT_EQ(c.feedback_rois[1].name, "B");
  EXPECT_EQ(c.feedback_udp.size(), 1u);
  EXPECT_NO_THROW(validate(c));
}

TEST(PipelineConfig, RegistrationAndTheSpaceOfEachRoi) {
  const PipelineConfig c = parse_pipeline_config(R"(
[server]
session_dir = "/s"
[registration]
t1 = "anat/t1.nii.gz"
template = "mni152"
normalization = "anat/t1_to_mni"
warp = false
epi_levels = "8:8,4:4"
warp_levels = "6:20,3:10"
[connectivity]
seed = { sphere_mm = [0, -52, 26], space = "template" }
[feedback]
rois = [ { sphere_mm = [-38, -24, 56] }, { sphere_mm = [10, 20, 30], space = "epi", name = "scanner" } ]
)",
                                                 "/base");
  EXPECT_EQ(c.t1, "/base/anat/t1.nii.gz");
  EXPECT_EQ(c.template_name, "mni152");  // a name stays a name; a file is relative to the session file
  EXPECT_EQ(parse_pipeline_config("[registration]\ntemplate = \"mine.nii.gz\"\n", "/base").template_name,
            "/base/mine.nii.gz");
  EXPECT_EQ(c.normalization, "/base/anat/t1_to_mni");
  EXPECT_FALSE(c.normalization_warp);
  EXPECT_EQ(c.epi_levels, "8:8,4:4");
  EXPECT_EQ(c.normalization_levels, "6:20,3:10");
  EXPECT_TRUE(c.registration());
  EXPECT_EQ(c.space_of(*c.seed), RoiSpace::kTemplate);
  EXPECT_EQ(c.space_of(c.feedback_rois[0]), RoiSpace::kTemplate);  // with [registration]: template (MNI) mm
  EXPECT_EQ(c.space_of(c.feedback_rois[1]), RoiSpace::kEpi);
  EXPECT_NO_THROW(validate(c));
  // Without [registration] (every session file before it): a sphere is in the EPI's world, as it always was.
  const PipelineConfig old = parse_pipeline_config("[feedback]\nrois = [ { sphere_mm = [-38, -24, 56] } ]\n");
  EXPECT_FALSE(old.registration());
  EXPECT_EQ(old.space_of(old.feedback_rois[0]), RoiSpace::kEpi);
  // Mistakes.
  EXPECT_NE(error_of("[feedback]\nrois = [ { sphere_mm = [1, 2, 3], space = \"mni\" } ]\n").find("space must be"),
            std::string::npos);
  EXPECT_NE(error_of("[feedback]\nrois = [ { atlas = \"Precentral_L\", space = \"epi\" } ]\n")
                .find("left out for an atlas region"),
            std::string::npos);
  EXPECT_NE(error_of("[registration]\nt2 = \"x\"\n").find("unknown key 't2' in [registration]"), std::string::npos);
  auto invalid = [](const PipelineConfig& config) {
    try {
      validate(config);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("valid");
  };
  PipelineConfig v = c;
  v.t1.clear();
  EXPECT_NE(invalid(v).find("normalization (T1 -> template) needs the T1"), std::string::npos) << invalid(v);
  v = c;
  v.atlas_transform = "/x_affine.txt";
  EXPECT_NE(invalid(v).find("give one of them"), std::string::npos) << invalid(v);
  v = c;
  v.epi_levels = "8:8,x";
  EXPECT_NE(invalid(v).find("[registration]"), std::string::npos) << invalid(v);
}

TEST(PipelineConfig, MistakesNameTheKey) {
  EXPECT_NE(error_of("[server]\nrign = 4\n").find("unknown key 'rign' in [server]"), std::string::npos);
  EXPECT_NE(error_of("[sever]\n").find("unknown section 'sever'"), std::string::npos);
  EXPECT_NE(error_of("[server]\nring = \"many\"\n").find("[server] ring must be an integer"), std::string::npos);
  EXPECT_NE(error_of("[server]\nring = -3\n").find("non-negative"), std::string::npos);
  EXPECT_NE(error_of("[glm]\ncontrasts = [1, 2]\n").find("array of strings"), std::string::npos);
  EXPECT_NE(error_of("[feedback]\nmode = \"psc\"\n").find("roi-psc, differential or connectivity"), std::string::npos);
  EXPECT_NE(error_of("[feedback]\nrois = [ { sphere_mm = [1, 2] } ]\n").find("three numbers"), std::string::npos);
  EXPECT_NE(error_of("[feedback]\nrois = [ { sphere_mm = [1, 2, 3], mask = \"m\" } ]\n").find("exactly one"),
            std::string::npos);
  EXPECT_NE(error_of("[server\n").find("line 1"), std::string::npos);  // TOML syntax errors give the line
}

TEST(PipelineConfig, ValidationCatchesInconsistentSettings) {
  PipelineConfig c = upload_only_config("/tmp/x", 16);
  EXPECT_NO_THROW(validate(c));
  c.glm_window = 20;
  EXPECT_THROW(validate(c), std::invalid_argument);  // longer than the ring
  c = upload_only_config("", 16);
  EXPECT_THROW(validate(c), std::invalid_argument);  // no session directory
  c = upload_only_config("/tmp/x", 16);
  c.feedback = true;
  c.feedback_mode = FeedbackMode::kConnectivity;
  c.feedback_rois.resize(1);
  EXPECT_THROW(validate(c), std::invalid_argument);  // connectivity needs two ROIs
}

TEST(PipelineConfig, RunsAnalysedAtOnce) {
  const PipelineConfig defaults = parse_pipeline_config("[server]\nsession_dir = \"s\"\n", "/tmp");
  EXPECT_EQ(defaults.max_live_runs, 2);
  EXPECT_EQ(defaults.live_run_idle_s, 60.0);
  const PipelineConfig c =
      parse_pipeline_config("[server]\nsession_dir = \"s\"\nmax_live_runs = 1\nlive_run_idle_s = 5.5\n", "/tmp");
  EXPECT_EQ(c.max_live_runs, 1);
  EXPECT_EQ(c.live_run_idle_s, 5.5);
  PipelineConfig bad = upload_only_config("/tmp/x", 16);
  bad.max_live_runs = 0;
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.max_live_runs = 2;
  bad.live_run_idle_s = std::nan("");
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.live_run_idle_s = 0.0;
  EXPECT_THROW(validate(bad), std::invalid_argument);
}

}  // namespace
}  // namespace rtf::stream

namespace rtf::stream {
namespace {

std::string validation_error_of(std::string_view text) {
  try {
    validate(parse_pipeline_config(text, "/tmp"));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(PipelineConfig, TheQaSection) {
  const PipelineConfig defaults = parse_pipeline_config("[server]\nsession_dir = \"s\"\n", "/tmp");
  EXPECT_TRUE(defaults.qa);
  EXPECT_EQ(defaults.qa_options.fd_thresholds, (std::vector<double>{0.2, 0.3, 0.5}));
  const PipelineConfig c = parse_pipeline_config(
      "[server]\nsession_dir = \"s\"\n[qa]\nmask = \"m.nii.gz\"\nfd_filter = \"notch\"\nfd_band_low_bpm = 12\n"
      "fd_band_high_bpm = 20\nfd_thresholds = [0.1, 0.25]\ntarget_minutes = 8\ncensor = \"power2014\"\n"
      "alarm_fd_mm = 0.9\nalarm_outlier_fraction = 0.1\nalarm_tsnr_min = 30\nalarm_tsnr_min_volumes = 12\n"
      "alarm_usable_target = false\nslice_threshold = 6\nslice_history = 40\nslice_min_history = 8\n"
      "carpet_rows = 100\ntsnr_map_every = 3\n",
      "/tmp/base");
  EXPECT_EQ(c.qa_mask, "/tmp/base/m.nii.gz");
  const LiveQaOptions& q = c.qa_options;
  EXPECT_EQ(q.fd_filter.kind, FdFilterKind::kNotch);
  EXPECT_EQ(q.fd_filter.band_low_bpm, 12);
  EXPECT_EQ(q.fd_filter.band_high_bpm, 20);
  EXPECT_EQ(q.fd_thresholds, (std::vector<double>{0.1, 0.25}));
  EXPECT_EQ(q.target_minutes, 8);
  EXPECT_EQ(q.censor, CensorRule::kPower2014);
  EXPECT_EQ(q.alarms.fd_mm, 0.9);
  EXPECT_EQ(q.alarms.outlier_fraction, 0.1);
  EXPECT_EQ(q.alarms.tsnr_min, 30);
  EXPECT_EQ(q.alarms.tsnr_min_volumes, 12);
  EXPECT_FALSE(q.alarms.usable_target);
  EXPECT_EQ(q.slices.threshold, 6);
  EXPECT_EQ(q.slices.history, 40);
  EXPECT_EQ(q.slices.min_history, 8);
  EXPECT_EQ(q.carpet_rows, 100);
  EXPECT_EQ(q.tsnr_map_every, 3);
  EXPECT_NO_THROW(validate(c));
  EXPECT_FALSE(parse_pipeline_config("[server]\nsession_dir = \"s\"\n[qa]\nenabled = false\n").qa);
  // Wrong types and names.
  EXPECT_NE(error_of("[qa]\nfd_filter = \"bandstop\"\n").find("[qa] fd_filter must be"), std::string::npos);
  EXPECT_NE(error_of("[qa]\ncensor = \"strict\"\n").find("[qa] censor must be"), std::string::npos);
  EXPECT_NE(error_of("[qa]\nfd_thresholds = [\"a\"]\n").find("array of numbers"), std::string::npos);
  EXPECT_NE(error_of("[qa]\nalarm_fd = 1\n").find("unknown key 'alarm_fd' in [qa]"), std::string::npos);
  // Out of range: clear errors at validation, before anything starts.
  const std::string base = "[server]\nsession_dir = \"s\"\n[qa]\n";
  EXPECT_NE(validation_error_of(base + "fd_thresholds = [0.2, -0.1]\n").find("[qa] fd_thresholds"), std::string::npos);
  EXPECT_NE(validation_error_of(base + "fd_thresholds = []\n").find("[qa] fd_thresholds"), std::string::npos);
  EXPECT_NE(validation_error_of(base + "alarm_outlier_fraction = 1.5\n").find("[qa] alarm_outlier_fraction"),
            std::string::npos);
  EXPECT_NE(validation_error_of(base + "alarm_fd_mm = -1\n").find("[qa] alarm_fd_mm"), std::string::npos);
  EXPECT_NE(validation_error_of(base + "target_minutes = 0\n").find("[qa] target_minutes"), std::string::npos);
  EXPECT_NE(validation_error_of(base + "tsnr_map_every = 0\n").find("[qa] tsnr_map_every"), std::string::npos);
  EXPECT_NE(validation_error_of(base + "slice_threshold = 0\n").find("threshold"), std::string::npos);
  EXPECT_NE(validation_error_of("[server]\nsession_dir = \"s\"\n[run]\ntr = 0.8\n[qa]\nfd_filter = \"notch\"\n"
                                "fd_band_low_bpm = 30\nfd_band_high_bpm = 20\n")
                .find("[qa] fd_filter at TR 0.8 s"),
            std::string::npos);
  EXPECT_EQ(validation_error_of(base + "alarm_fd_mm = 0\nalarm_outlier_fraction = 0\n"), "no error") << "0: off";
  EXPECT_EQ(validation_error_of("[server]\nsession_dir = \"s\"\n[qa]\nenabled = false\ntarget_minutes = 0\n"),
            "no error")
      << "QA off: its settings are not used";
}

}  // namespace
}  // namespace rtf::stream
