// RunPipeline: the device stages of one run, built when the run's first volume arrives (its grid fixes every size)
// and fed one volume at a time: upload into the raw ring; then, for the volumes it analyses, motion correction in
// place, smoothing into the analysis ring, and the statistics: cumulative and sliding-window GLM, CCA, the seed map,
// the atlas ROI x ROI matrices, the feedback ROIs' means and the neurofeedback value. Stages that cannot be set up
// for this run (no design, an atlas that misses the grid...) are switched off with one log line; a stage that fails on
// a volume is logged and skipped for that volume, never fatal. Nothing is allocated per TR except the result's
// small vectors. With subject-space ROIs ([registration]), the ROI stages (atlas, seed, feedback ROIs and value) start
// when the SubjectSpaceSetup's result for the run arrives; the volumes analysed before are back-filled from the
// device ring. docs/live.md.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/connectivity/roi_correlation.hpp"
#include "core/connectivity/roi_timeseries.hpp"
#include "core/connectivity/seed_correlation.hpp"
#include "core/decoding/live_decoder.hpp"
#include "core/design/design_matrix.hpp"
#include "core/feedback/decoder_feedback.hpp"
#include "core/feedback/feedback_run.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/glm/live_glm.hpp"
#include "core/motion/live_motion.hpp"
#include "core/qa/live_qa.hpp"
#include "core/stats/cca.hpp"
#include "stream/output/row_file.hpp"
#include "stream/pipeline/pipeline_config.hpp"
#include "stream/pipeline/roi_placement.hpp"
#include "stream/pipeline/subject_space_setup.hpp"

namespace rtf::stream {

// One analysed TR. Maps (filled by RunPipeline::read_maps) are host copies of the device maps (empty when the stage is
// off), x fastest.
struct TrResult {
  std::string run;
  int64_t index = 0;
  std::array<int64_t, 3> dims{0, 0, 0};                  // the run's grid
  Eigen::Matrix4d affine = Eigen::Matrix4d::Identity();  // voxel -> world mm
  std::optional<VolumeMotion> motion;
  std::optional<FeedbackSample> feedback;
  std::vector<double> roi_means;  // the feedback ROIs' means of this volume (motion-corrected, unsmoothed)
  std::vector<std::string> roi_names;
  std::string map_name;              // the contrast of t_map
  std::vector<float> t_map;          // cumulative GLM t of the published contrast
  std::vector<float> sliding_t_map;  // sliding-window GLM t of the same contrast
  std::vector<float> cca_map;
  std::vector<float> seed_map;      // sliding-window Fisher z
  std::vector<float> volume;        // the motion-corrected volume
  std::vector<float> connectivity;  // atlas R x R sliding-window Pearson r, row-major (NaN rows: missing regions)
  int64_t rois_in_atlas = 0;
  // For viewers (filled by read_maps; the name lists are the run's, shared, not copied per TR): the design's column
  // names and this volume's row (empty without a design or past its rows; motion columns hold this volume's motion, as
  // the GLM sees them), the task conditions (the events' trial types, sorted), the atlas regions (`connectivity`'s
  // rows, in order).
  std::shared_ptr<const std::vector<std::string>> design_columns;
  std::vector<double> design_row;
  std::shared_ptr<const std::vector<std::string>> conditions;
  std::shared_ptr<const std::vector<std::string>> regions;
  // Subject-space ROIs ([registration]): "pending", "ready" or "failed" (empty without [registration]), why when not
  // ready, and whether a feedback value waits for them.
  std::string roi_status, roi_reason;
  bool feedback_waits_for_rois = false;
  // The ROIs as bits on the grid (null before they are placed); `roi_labels_frame`: this TR's PUB message carries them
  // (filled by read_maps: the first message after they are placed, then every kRoiLabelsEvery-th).
  std::shared_ptr<const RoiLabels> roi_labels;
  bool roi_labels_frame = false;
  // Stage completion times (steady clock ns, 0: stage off).
  int64_t motion_ns = 0, smoothed_ns = 0, stats_ns = 0, feedback_ns = 0;
  std::vector<std::string> stage_errors;  // a stage that failed on this volume: "stage: reason"
  // The live QA stage (core/qa/live_qa.hpp; null when off): `qa` this volume's, filled by RunPipeline::run_qa after
  // the feedback value went out (so in the PUB message, not the feedback line); `qa_previous` the newest complete
  // one when process() ran (the feedback line's, normally the volume before).
  std::shared_ptr<const LiveQaSample> qa, qa_previous;
  // The live decoder ([decoder] model; core/decoding/live_decoder.hpp): its status ("ok", "warming-up", "off"; empty
  // when no model is configured), why it is off, this volume's decision, and the model's classes.
  std::string decoder_status, decoder_reason;
  std::optional<LiveDecision> decoder;
  std::shared_ptr<const std::vector<std::string>> decoder_classes;
};

// A viewer that connects late, or a dropped PUB message, gets the ROI labels within this many messages.
inline constexpr int64_t kRoiLabelsEvery = 16;

class RunPipeline {
 public:
  // `grid`: the run's geometry (float volumes); `run_dir`: SESSION_DIR/runs/<run> for the per-run files.
  // `subject_space`: with [registration], where the run's ROIs come from (null: template space is taken as the EPI's
  // world, as the warm-up does); `wait_for_rois`: wait for them on the reference volume instead of going on without
  // them (replay: every volume analysed with the ROIs, whatever the device's speed).
  RunPipeline(Device& device, const PipelineConfig& config, const ImageHeader& grid, std::string run,
              std::filesystem::path run_dir, SubjectSpaceSetup* subject_space = nullptr, bool wait_for_rois = false);
  ~RunPipeline();
  RunPipeline(const RunPipeline&) = delete;
  RunPipeline& operator=(const RunPipeline&) = delete;

  // Uploads volume `index` (raw scanner datatype) into the raw ring and waits until it is there.
  void upload(int64_t index, std::span<const std::byte> payload, DataType type);

  // Analyses volume `index`, which must be the newest uploaded. Never throws for a stage's failure (see TrResult).
  // The maps stay on the device: read_maps() fetches them, after the feedback value has gone out.
  TrResult process(int64_t index);

  // The QA stage on this volume (after its feedback line went out): result.qa, alarms logged. Never throws.
  void run_qa(TrResult& result);

  // Host copies of this TR's maps and matrix into `result` (the corrected volume, the t maps, CCA, seed, R x R).
  void read_maps(TrResult& result);

  // Writes the run's final maps (NIfTI) and matrices (tsv) into the run directory. Idempotent per run. A file that
  // cannot be written is logged and reported to output_failures(); the others are still written.
  void finish();
  // finish() in two halves: reads the final maps back from the device now (the caller's thread owns its queue) and
  // returns the function that writes them, which may run on any thread (the live thread hands it to a writer thread:
  // another run's next volume never waits for this run's files). Empty when there is nothing to write (finished
  // already, or no volume analysed).
  std::function<void()> final_maps();
  // Whether `index` is the run's last volume (config volumes), after which finish() can run at once.
  bool is_last(int64_t index) const { return config_.volumes > 0 && index == config_.volumes - 1; }

  const std::string& run() const { return run_; }
  const ImageHeader& grid() const { return grid_; }
  // Which stages are on for this run, for the log and the PUB header ("motion", "smoothing", "glm", ...).
  std::vector<std::string> active_stages() const;
  int64_t analysed() const { return analysed_; }

 private:
  void setup_design();
  // The ROI stages (atlas, seed, feedback ROIs and value) from the placed regions; each that cannot start is off.
  void install_rois(const PlacedRois& rois);
  // Without [registration] (or without a SubjectSpaceSetup: the warm-up): the regions placed at once.
  void place_unregistered_rois();
  // Subject-space ROIs: hands the reference volume over once it is analysed, and installs the result when it is
  // there (then back-fills the volumes analysed before `index`).
  void request_subject_space(int64_t index);
  void poll_subject_space(int64_t index, TrResult& r);
  void backfill(int64_t index);
  template <typename F>
  void guarded(const char* stage, TrResult& r, F&& body);
  // The live decoder (stream/pipeline/run_pipeline_decoder.cpp): built for the run's grid at its start (off, with the
  // reason, when the model does not fit), fed every uploaded volume in order, read for the analysed one.
  void start_decoder();
  void start_decoder_feedback();  // after the design (the events) is set up
  void update_decoder(int64_t index);
  void read_decoder(TrResult& r);
  void decoded_feedback(TrResult& r);  // r.feedback from the decoder's value ([decoder] feedback)

  Device& device_;
  PipelineConfig config_;
  ImageHeader grid_;
  std::string run_;
  std::filesystem::path run_dir_;
  int64_t voxels_;
  double tr_s_ = 0.0;
  bool finished_ = false;
  int64_t analysed_ = 0;

  DeviceRingBuffer raw_ring_;
  std::unique_ptr<LiveMotionCorrection> motion_;
  std::unique_ptr<GaussianSmoother> smoother_;
  std::unique_ptr<DeviceRingBuffer> smoothed_ring_;
  DeviceBuffer<float> scratch_in_, scratch_out_;

  std::vector<Event> events_;
  std::optional<DesignMatrix> design_;
  std::shared_ptr<const std::vector<std::string>> design_columns_, conditions_, regions_;  // for TrResult
  std::vector<GlmContrast> contrasts_;
  int published_contrast_ = -1;  // index among the t contrasts
  std::unique_ptr<CumulativeGlm> cumulative_;
  std::unique_ptr<SlidingGlm> sliding_;
  std::unique_ptr<SlidingCca> cca_;
  DeviceBuffer<float> cca_map_;

  std::unique_ptr<RoiCorrelation> atlas_;
  std::unique_ptr<SeedCorrelation> seed_;
  std::unique_ptr<RoiTimeseries> feedback_rois_;
  std::vector<std::string> feedback_roi_names_;
  std::unique_ptr<FeedbackRun> feedback_;
  std::unique_ptr<RowFile> feedback_log_;  // runs/<run>/feedback.tsv
  std::unique_ptr<RowFile> motion_log_;    // runs/<run>/motion.tsv (appended: a restarted server continues it)

  // [qa]: built on the first volume QA sees (its brain mask comes from it).
  std::unique_ptr<LiveQa> qa_;
  bool qa_off_ = false;  // off for this run (a mask that does not fit, or it could not start)
  std::shared_ptr<const LiveQaSample> last_qa_;
  std::string qa_mask_source_;
  double qa_cnr_p95_ = std::numeric_limits<double>::quiet_NaN();
  // The CNR map of the published contrast (cumulative GLM): c'beta / sqrt(residual variance), NaN where it has none.
  std::vector<float> cnr_map() const;
  std::vector<uint8_t> atlas_grey_;  // the atlas's voxels on the grid (empty: no atlas placed)
  // [decoder]
  std::unique_ptr<LiveDecoder> decoder_;
  std::string decoder_off_;   // why the decoder is off for this run ("" while on, or without a model)
  int64_t decoder_next_ = 0;  // the volume index the decoder takes next
  std::unique_ptr<DecoderFeedback> decoder_feedback_;
  int decoder_target_ = 1;  // the target class's index among the model's classes
  std::shared_ptr<const std::vector<std::string>> decoder_classes_;
  std::vector<int64_t> raw_slots_, analysis_slots_;
  std::vector<std::string> failed_once_;  // stages whose failure was logged at error level already

  // Subject-space ROIs.
  SubjectSpaceSetup* subject_space_ = nullptr;
  bool wait_for_rois_ = false;
  enum class RoiState { kReady, kAwaitingReference, kRequested, kFailed } roi_state_ = RoiState::kReady;
  std::string roi_failure_;
  int64_t reference_index_ = 0;
  std::shared_ptr<const RoiLabels> roi_labels_;
  int64_t roi_label_messages_ = 0;
  struct Analysed {  // the volumes analysed so far (the last `ring`), for the back-fill
    int64_t index = 0;
    std::array<double, 6> motion{};
    bool has_motion = false;
  };
  std::deque<Analysed> analysed_history_;
};

}  // namespace rtf::stream
