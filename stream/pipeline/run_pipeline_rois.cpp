// RunPipeline's ROI stages: placing the regions without a registration, installing placed regions (atlas ROI x ROI,
// seed map, feedback ROIs and value), and subject-space ROIs: the reference volume handed to the SubjectSpaceSetup,
// its result installed, the volumes analysed meanwhile back-filled from the device ring.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "stream/pipeline/live_stage.hpp"
#include "stream/pipeline/run_pipeline.hpp"

namespace rtf::stream {

namespace {

// The slots of the volumes `ring` holds with index <= `last`, oldest first (the window as it was when `last` was the
// newest, less what the ring has overwritten since).
void slots_up_to(const DeviceRingBuffer& ring, int64_t last, std::vector<int64_t>& out) {
  out.clear();
  for (int64_t j = std::max<int64_t>(0, last - ring.capacity() + 1); j <= last; ++j) {
    if (ring.contains(j)) out.push_back(ring.slot_of(j));
  }
}

}  // namespace

void RunPipeline::place_unregistered_rois() {
  TemplateGeometry geometry;
  std::optional<LabelAtlas> atlas;
  std::string atlas_error;
  try {
    geometry = unregistered_geometry(config_);
    if (!config_.atlas.empty()) atlas = load_atlas(config_);
  } catch (const std::exception& e) {
    atlas_error = e.what();
  }
  const PlacedRois placed = place_rois(config_, grid_, atlas ? &*atlas : nullptr, atlas_error, geometry);
  if (!geometry.chain.empty() && placed.atlas) {
    spdlog::info("run {}: atlas pulled onto the EPI through {} ({} of {} regions present)", run_,
                 config_.atlas_transform, placed.atlas->present(), placed.atlas->size());
  }
  try {
    write_placed_rois(run_dir_, grid_, placed, !geometry.chain.empty());
  } catch (const std::exception& e) {
    spdlog::error("run {}: writing the ROIs on the EPI grid failed: {}", run_, e.what());
  }
  install_rois(placed);
}

void RunPipeline::install_rois(const PlacedRois& rois) {
  ConnectivityOptions o;
  o.window = config_.connectivity_window;
  if (!config_.atlas.empty()) {
    try {
      if (!rois.atlas) throw std::invalid_argument(rois.atlas_error);
      if (rois.atlas->present() < 2) throw std::invalid_argument("fewer than two atlas regions on this grid");
      atlas_ = std::make_unique<RoiCorrelation>(device_, *rois.atlas, config_.ring, o);
      // The atlas's regions are grey matter: the QA carpet's first rows (when QA starts after this).
      atlas_grey_.resize(rois.atlas->roi_of_voxel.size());
      std::transform(rois.atlas->roi_of_voxel.begin(), rois.atlas->roi_of_voxel.end(), atlas_grey_.begin(),
                     [](int32_t roi) { return roi >= 0 ? 1 : 0; });
      std::vector<std::string> names;
      for (const AtlasRegion& region : rois.atlas->regions) names.push_back(region.name);
      regions_ = std::make_shared<const std::vector<std::string>>(std::move(names));
    } catch (const std::exception& e) {
      spdlog::error("run {}: ROI x ROI connectivity off: {}", run_, e.what());
    }
  }
  if (config_.seed) {
    try {
      if (!rois.seed) throw std::invalid_argument(rois.seed_error);
      seed_ = std::make_unique<SeedCorrelation>(device_, grid_, *rois.seed, config_.ring, o);
    } catch (const std::exception& e) {
      spdlog::error("run {}: seed map off: {}", run_, e.what());
    }
  }
  if (config_.feedback && !config_.feedback_rois.empty()) {
    try {
      if (rois.feedback.size() != config_.feedback_rois.size()) throw std::invalid_argument(rois.feedback_error);
      std::vector<int32_t> roi_of_voxel(static_cast<size_t>(voxels_), -1);
      for (size_t r = 0; r < rois.feedback.size(); ++r) {
        for (int32_t v : rois.feedback[r]) roi_of_voxel[static_cast<size_t>(v)] = static_cast<int32_t>(r);
        feedback_roi_names_.push_back(config_.feedback_rois[r].name);
      }
      const auto count = static_cast<int64_t>(config_.feedback_rois.size());
      feedback_rois_ = std::make_unique<RoiTimeseries>(device_, roi_of_voxel, count, config_.ring);
      if (config_.volumes <= 0 || events_.empty()) {
        spdlog::warn("run {}: feedback value off (needs [run] volumes and events); ROI means are still reported", run_);
      } else {
        FeedbackConfig f;
        f.mode = config_.feedback_mode;
        f.protocol = config_.feedback_protocol;
        f.tr_s = tr_s_;
        f.n_volumes = config_.volumes;
        f.n_rois = count;
        for (int64_t r = 0; r < count; ++r) f.rois.push_back(r);
        if (f.mode != FeedbackMode::kRoiPsc) f.rois = {0, 1};
        f.baseline_condition = config_.baseline_condition;
        f.hrf_delay_s = config_.hrf_delay_s;
        f.kalman.enabled = config_.kalman;
        f.scaling.enabled = config_.scaling;
        f.detrend.motion_regressors = motion_ != nullptr;
        feedback_ = std::make_unique<FeedbackRun>(f, events_);
      }
    } catch (const std::exception& e) {
      spdlog::error("run {}: feedback off: {}", run_, e.what());
      feedback_roi_names_.clear();
      feedback_rois_.reset();
      feedback_.reset();
    }
  }
  if (rois.labels) {
    auto labels = std::make_shared<RoiLabels>(*rois.labels);
    static std::atomic<int64_t> versions{0};  // distinct per placement in this process: a viewer sees the change
    labels->version = ++versions;
    roi_labels_ = std::move(labels);
    roi_label_messages_ = 0;
  }
}

void RunPipeline::request_subject_space(int64_t index) {
  if (roi_state_ != RoiState::kAwaitingReference || index < reference_index_) return;
  if (motion_ && !motion_->has_reference()) return;
  // The reference volume (or the first analysed one after it, which motion correction then takes as reference).
  ImageHeader h = grid_;
  h.num_volumes = 1;
  subject_space_->request(run_, Image(h, raw_ring_.read_volume(index)), index, run_dir_);
  roi_state_ = RoiState::kRequested;
}

void RunPipeline::poll_subject_space(int64_t index, TrResult& r) {
  if (subject_space_ == nullptr) return;
  if (roi_state_ == RoiState::kRequested) {
    const std::shared_ptr<const SubjectSpaceResult> result =
        wait_for_rois_ ? subject_space_->wait(run_) : subject_space_->result(run_);
    if (result && !result->failure.empty()) {
      roi_state_ = RoiState::kFailed;
      roi_failure_ = result->failure;
      spdlog::error("run {}: no ROI outputs in this run (atlas, seed, feedback ROIs): {}", run_, roi_failure_);
    } else if (result) {
      install_rois(result->rois);
      roi_state_ = RoiState::kReady;
      spdlog::info(
          "run {}: subject-space ROIs ready at volume {}, {:.3f} s after the reference volume went to the "
          "registration",
          run_, index, result->seconds);
      backfill(index);
    }
  }
  switch (roi_state_) {
    case RoiState::kReady:
      r.roi_status = "ready";
      break;
    case RoiState::kFailed:
      r.roi_status = "failed";
      r.roi_reason = "the subject-space registration failed: " + roi_failure_;
      break;
    default:
      r.roi_status = "pending";
      r.roi_reason = "the subject-space registration is running; ROI outputs start when it is done";
      break;
  }
  r.feedback_waits_for_rois = roi_state_ != RoiState::kReady && config_.feedback && !config_.feedback_rois.empty();
}

void RunPipeline::backfill(int64_t index) {
  std::vector<int64_t> filled, lost;
  DeviceRingBuffer* analysis = smoothed_ring_ ? smoothed_ring_.get() : &raw_ring_;
  std::vector<double> means(feedback_roi_names_.size());
  for (const Analysed& a : analysed_history_) {
    if (a.index >= index) continue;
    if (!raw_ring_.contains(a.index) || !analysis->contains(a.index)) {
      lost.push_back(a.index);
      continue;
    }
    try {
      // As if the ROIs had been there: the cumulative estimates and the feedback's baseline take each volume once,
      // in order; the sliding windows are what the ring held then.
      const int64_t slot = raw_ring_.slot_of(a.index);
      if (atlas_) {
        slots_up_to(raw_ring_, a.index, raw_slots_);
        atlas_->update(raw_ring_.data(), raw_slots_, slot);
      }
      if (seed_) {
        slots_up_to(*analysis, a.index, analysis_slots_);
        seed_->update(analysis->data(), analysis_slots_, analysis->slot_of(a.index));
      }
      if (feedback_rois_) {
        feedback_rois_->enqueue(raw_ring_.data(), slot);
        feedback_rois_->read(slot, means);
        if (feedback_ && a.index < config_.volumes) {
          feedback_->process(a.index, means,
                             a.has_motion ? std::span<const double>(a.motion) : std::span<const double>());
        }
      }
      filled.push_back(a.index);
    } catch (const std::exception& e) {
      spdlog::error("run {}: back-filling volume {} failed: {}", run_, a.index, e.what());
      lost.push_back(a.index);
    }
  }
  if (!filled.empty() || !lost.empty()) {
    spdlog::info(
        "run {}: back-filled the ROI estimates and the feedback baseline with volumes {} from the device "
        "ring{}",
        run_, filled.empty() ? "(none)" : format_index_ranges(filled),
        lost.empty()
            ? std::string()
            : fmt::format("; volumes {} had left the ring (or failed) and are left out", format_index_ranges(lost)));
  }
}

}  // namespace rtf::stream
