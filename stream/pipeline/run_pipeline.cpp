// RunPipeline: per-run set-up of each stage from the config and the run's grid, the per-TR sequence, the run's files.
#include "stream/pipeline/run_pipeline.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/connectivity/window.hpp"
#include "core/design/contrast.hpp"
#include "core/device/cl_error.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "stream/output/output_failures.hpp"

namespace rtf::stream {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The period of a block design: the mean spacing of the first condition's onsets (needs at least two), else 0.
double design_period(const std::vector<Event>& events) {
  if (events.empty()) return 0.0;
  const std::string& first = events.front().trial_type;
  std::vector<double> onsets;
  for (const Event& e : events) {
    if (e.trial_type == first) onsets.push_back(e.onset_s);
  }
  std::sort(onsets.begin(), onsets.end());
  if (onsets.size() < 2) return 0.0;
  return (onsets.back() - onsets.front()) / static_cast<double>(onsets.size() - 1);
}

void write_map(const std::filesystem::path& path, const ImageHeader& grid, std::vector<float> data) {
  ImageHeader h = grid;
  h.num_volumes = 1;
  h.source_type = DataType::kFloat32;
  write_nifti(path, Image(h, std::move(data)));
}

std::string number(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : "n/a";
}

}  // namespace

RunPipeline::RunPipeline(Device& device, const PipelineConfig& config, const ImageHeader& grid, std::string run,
                         std::filesystem::path run_dir, SubjectSpaceSetup* subject_space, bool wait_for_rois)
    : device_(device),
      config_(config),
      grid_(grid),
      run_(std::move(run)),
      run_dir_(std::move(run_dir)),
      voxels_(grid.voxels_per_volume()),
      raw_ring_(device, voxels_, config.ring),
      subject_space_(config.registration() ? subject_space : nullptr),
      wait_for_rois_(wait_for_rois) {
  tr_s_ = config_.tr_s > 0 ? config_.tr_s : grid_.tr_s;
  std::filesystem::create_directories(run_dir_);
  start_decoder();
  if (config_.motion) {
    LiveMotionOptions m;
    if (motion_reference_is_index(config_.motion_reference)) {
      m.reference_index = std::stoll(config_.motion_reference);
    } else {
      m.reference_image = read_nifti(config_.motion_reference);
    }
    try {
      motion_ = std::make_unique<LiveMotionCorrection>(device, grid_, std::move(m));
      motion_log_ = std::make_unique<RowFile>(run_dir_ / "motion.tsv", RowFile::Mode::kAppend, motion_tsv_header());
    } catch (const std::invalid_argument& e) {
      spdlog::error("run {}: motion correction off: {}", run_, e.what());
    }
  }
  const auto n = static_cast<size_t>(voxels_);
  if (config_.smoothing_fwhm_mm > 0) {
    SmoothingSpec s;
    s.fwhm_mm = config_.smoothing_fwhm_mm;
    smoother_ = std::make_unique<GaussianSmoother>(device, grid_.dims, grid_.voxel_mm, s);
    smoothed_ring_ = std::make_unique<DeviceRingBuffer>(device, voxels_, config_.ring);
    scratch_in_ = DeviceBuffer<float>(device, n);
    scratch_out_ = DeviceBuffer<float>(device, n);
  }
  setup_design();
  start_decoder_feedback();
  if (config_.feedback && !config_.feedback_rois.empty()) {
    std::string header = "volume\tvalue\tstatus\tcondition";
    for (const RoiSpec& roi : config_.feedback_rois) header += "\t" + roi.name;
    feedback_log_ = std::make_unique<RowFile>(run_dir_ / "feedback.tsv", RowFile::Mode::kTruncate, header + "\n");
  }
  if (subject_space_ != nullptr) {
    roi_state_ = RoiState::kAwaitingReference;
    const bool reference_image = config_.motion && !motion_reference_is_index(config_.motion_reference);
    reference_index_ = reference_image || !config_.motion ? 0 : std::stoll(config_.motion_reference);
    if (reference_image) {
      // The motion reference is known before the run: its registration starts now, before the first volume.
      subject_space_->request(run_, read_nifti(config_.motion_reference), -1, run_dir_);
      roi_state_ = RoiState::kRequested;
    }
    spdlog::info(
        "run {}: ROI outputs (atlas, seed, feedback ROIs) start when the subject-space registration of the "
        "{} is done",
        run_, reference_image ? "motion reference image" : fmt::format("volume {}", reference_index_));
  } else {
    place_unregistered_rois();
  }
  std::string stages;
  for (const std::string& s : active_stages()) stages += (stages.empty() ? "" : ", ") + s;
  spdlog::info("run {}: {}x{}x{} voxels, TR {} s; stages: {}", run_, grid_.dims[0], grid_.dims[1], grid_.dims[2], tr_s_,
               stages);
}

RunPipeline::~RunPipeline() {
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("run {}: reading the final maps back failed: {}", run_, e.what());
  }
  // The row files close (checked, logged) with their unique_ptrs.
}

void RunPipeline::setup_design() {
  if (config_.events.empty() || config_.volumes <= 0) return;
  try {
    if (!(tr_s_ > 0)) throw std::invalid_argument("no TR (give [run] tr)");
    events_ = read_events_tsv(config_.events).events;
    std::vector<std::string> conditions;
    for (const Event& e : events_) conditions.push_back(e.trial_type);
    std::sort(conditions.begin(), conditions.end());
    conditions.erase(std::unique(conditions.begin(), conditions.end()), conditions.end());
    conditions_ = std::make_shared<const std::vector<std::string>>(std::move(conditions));
    DesignOptions o;
    o.tr_s = tr_s_;
    o.n_scans = config_.volumes;
    o.highpass_cutoff_s = config_.glm_highpass_s;
    if (config_.glm_highpass_s <= 0) o.drift = DriftModel::kNone;
    if (config_.glm_motion_regressors && motion_) {
      o.confounds = Eigen::MatrixXd::Zero(config_.volumes, 6);  // filled per TR from the motion stage
      o.confound_names = motion_confound_names();
      o.demean_confounds = false;  // future values are unknown; the constant absorbs their mean
    }
    design_ = build_design_matrix(events_, o);
    design_columns_ = std::make_shared<const std::vector<std::string>>(design_->names());
    std::vector<std::string> specs = config_.contrasts;
    if (specs.empty()) {
      for (const auto& c : design_->columns) {
        if (c.kind == DesignColumn::Kind::kRegressor && c.basis == 0 && !c.modulated) specs.push_back(c.condition);
      }
    }
    for (const std::string& spec : specs) {
      const NamedContrast c = parse_named_contrast(spec, design_->names());
      contrasts_.push_back({c.name, c.weights});
    }
    int t_index = 0;
    for (const GlmContrast& c : contrasts_) {
      if (c.is_f()) continue;
      if (published_contrast_ < 0 && (config_.published_map.empty() || c.name == config_.published_map)) {
        published_contrast_ = t_index;
      }
      ++t_index;
    }
    if (!config_.published_map.empty() && published_contrast_ < 0) {
      throw std::invalid_argument(fmt::format("[glm] map: no t contrast named '{}'", config_.published_map));
    }
    LiveGlmSpec spec{*design_,     contrasts_, config_.glm_ar1,
                     std::nullopt, tr_s_,      o.drift == DriftModel::kCosine ? config_.glm_highpass_s : 0.0};
    if (config_.glm_cumulative) cumulative_ = std::make_unique<CumulativeGlm>(device_, voxels_, spec);
    if (config_.glm_window > 0) sliding_ = std::make_unique<SlidingGlm>(device_, voxels_, spec, config_.glm_window);
  } catch (const std::exception& e) {
    spdlog::error("run {}: GLM off: {}", run_, e.what());
    design_.reset();
    design_columns_.reset();
    cumulative_.reset();
    sliding_.reset();
  }
  if (!config_.cca) return;
  try {
    const double period = config_.cca_period_s > 0 ? config_.cca_period_s : design_period(events_);
    if (!(period > 0)) throw std::invalid_argument("no [cca] period_s and no repeating condition in the events");
    cca_ =
        std::make_unique<SlidingCca>(device_, grid_, config_.cca_window, CcaTemporalBasis::sine_cosine(period, tr_s_));
    cca_map_ = DeviceBuffer<float>(device_, static_cast<size_t>(voxels_));
  } catch (const std::exception& e) {
    spdlog::error("run {}: CCA off: {}", run_, e.what());
    cca_.reset();
  }
}

std::vector<std::string> RunPipeline::active_stages() const {
  std::vector<std::string> s;
  if (motion_) s.emplace_back("motion");
  if (smoother_) s.push_back(fmt::format("smoothing {} mm", config_.smoothing_fwhm_mm));
  if (cumulative_) s.emplace_back("cumulative GLM");
  if (sliding_) s.push_back(fmt::format("sliding GLM (W={})", config_.glm_window));
  if (cca_) s.push_back(fmt::format("CCA (W={})", config_.cca_window));
  if (seed_) s.emplace_back("seed map");
  if (atlas_) s.push_back(fmt::format("ROI x ROI ({} regions)", atlas_->rois().size()));
  if (feedback_rois_) s.push_back(fmt::format("feedback ROIs ({})", feedback_roi_names_.size()));
  if (feedback_) s.emplace_back("feedback value");
  if (config_.qa && !qa_off_) s.emplace_back("qa");
  if (decoder_) s.emplace_back("decoder");
  return s;
}

void RunPipeline::upload(int64_t index, std::span<const std::byte> payload, DataType type) {
  const ClEvent done = raw_ring_.push(index, payload, type);
  const cl_event e = done.get();
  RTF_CL_CHECK(clWaitForEvents(1, &e));
  update_decoder(index);
}

template <typename F>
void RunPipeline::guarded(const char* stage, TrResult& r, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    r.stage_errors.push_back(fmt::format("{}: {}", stage, e.what()));
    if (std::find(failed_once_.begin(), failed_once_.end(), stage) == failed_once_.end()) {
      failed_once_.emplace_back(stage);
      spdlog::error("run {} volume {}: {} failed: {} (further failures of this stage are logged at debug level)", run_,
                    r.index, stage, e.what());
    } else {
      spdlog::debug("run {} volume {}: {} failed: {}", run_, r.index, stage, e.what());
    }
  }
}

TrResult RunPipeline::process(int64_t index) {
  TrResult r;
  r.run = run_;
  r.index = index;
  r.qa_previous = last_qa_;
  read_decoder(r);
  r.dims = grid_.dims;
  r.affine = grid_.affine;
  ++analysed_;
  if (motion_) {
    guarded("motion", r, [&] { r.motion = motion_->process(raw_ring_, index); });
    r.motion_ns = now_ns();
    if (r.motion && !r.motion->converged) {
      spdlog::warn("run {} volume {}: motion flagged: {}", run_, index, r.motion->failure);
    }
    if (r.motion && motion_log_) motion_log_->append(motion_tsv_row(index, *r.motion));
  }
  if (subject_space_ != nullptr) {
    guarded("subject space", r, [&] { request_subject_space(index); });
    guarded("subject space", r, [&] { poll_subject_space(index, r); });
  }
  const int64_t slot = raw_ring_.slot_of(index);
  const auto offset = static_cast<size_t>(slot * voxels_) * sizeof(float);
  DeviceRingBuffer* analysis = &raw_ring_;
  if (smoother_) {
    guarded("smoothing", r, [&] {
      RTF_CL_CHECK(clEnqueueCopyBuffer(device_.queue(), raw_ring_.data().get(), scratch_in_.get(), offset, 0,
                                       scratch_in_.bytes(), 0, nullptr, nullptr));
      smoother_->enqueue(scratch_in_, scratch_out_, 1);
      smoothed_ring_->push_device(index, scratch_out_);
    });
    analysis = smoothed_ring_.get();
    RTF_CL_CHECK(clFinish(device_.queue()));
    r.smoothed_ns = now_ns();
  }
  ring_slots_in_time_order(raw_ring_, raw_slots_);
  ring_slots_in_time_order(*analysis, analysis_slots_);
  const int64_t newest_analysis = analysis->slot_of(index);
  if (atlas_) guarded("ROI x ROI", r, [&] { atlas_->enqueue(raw_ring_.data(), raw_slots_, slot); });
  if (feedback_rois_) guarded("feedback ROIs", r, [&] { feedback_rois_->enqueue(raw_ring_.data(), slot); });
  std::array<double, 6> motion_row{};
  if (r.motion) {
    for (size_t a = 0; a < 3; ++a) {
      motion_row[a] = r.motion->params.translation_mm[a];
      motion_row[3 + a] = r.motion->params.rotation_deg[a];
    }
  }
  if (subject_space_ != nullptr) {  // for a back-fill when the subject-space ROIs arrive
    analysed_history_.push_back({index, motion_row, r.motion.has_value()});
    if (static_cast<int64_t>(analysed_history_.size()) > config_.ring) analysed_history_.pop_front();
  }
  const bool motion_confounds = design_ && config_.glm_motion_regressors && motion_;
  const bool in_design = design_ && index < design_->x.rows();
  if (cumulative_ && in_design) {
    guarded("cumulative GLM", r, [&] {
      if (motion_confounds) cumulative_->set_confounds(index, motion_row);
      cumulative_->update(*analysis, index);
    });
  }
  if (sliding_ && in_design) {
    guarded("sliding GLM", r, [&] {
      if (motion_confounds) sliding_->set_confounds(index, motion_row);
      sliding_->update(*analysis, index);
    });
  }
  if (cca_ && index + 1 >= cca_->minimum_volumes()) guarded("CCA", r, [&] { cca_->enqueue(*analysis, cca_map_); });
  if (seed_) guarded("seed map", r, [&] { seed_->update(analysis->data(), analysis_slots_, newest_analysis); });
  if (atlas_) guarded("ROI x ROI", r, [&] { atlas_->finish(); });
  RTF_CL_CHECK(clFinish(device_.queue()));
  r.stats_ns = now_ns();
  if (feedback_rois_) {
    r.roi_names = feedback_roi_names_;
    r.roi_means.assign(feedback_roi_names_.size(), std::nan(""));
    guarded("feedback ROIs", r, [&] { feedback_rois_->read(slot, r.roi_means); });
    if (feedback_ && index < config_.volumes) {
      guarded("feedback", r, [&] {
        r.feedback = feedback_->process(index, r.roi_means,
                                        r.motion ? std::span<const double>(motion_row) : std::span<const double>());
      });
    }
    r.feedback_ns = now_ns();
    if (feedback_log_) {
      std::string row = fmt::format("{}\t{}\t{}\t{}", index, r.feedback ? number(r.feedback->value) : "n/a",
                                    r.feedback ? std::string(feedback_status_name(r.feedback->status)) : "off",
                                    r.feedback ? std::string(volume_condition_name(r.feedback->condition)) : "n/a");
      for (double m : r.roi_means) row += "\t" + number(m);
      feedback_log_->append(row + "\n");
    }
  } else if (r.feedback_waits_for_rois && feedback_log_) {
    std::string row = fmt::format("{}\tn/a\trois-{}\tn/a", index, r.roi_status);
    for (size_t k = 0; k < config_.feedback_rois.size(); ++k) row += "\tn/a";
    feedback_log_->append(row + "\n");
  }
  decoded_feedback(r);
  return r;
}

std::vector<float> RunPipeline::cnr_map() const {
  const auto n = static_cast<size_t>(voxels_);
  std::vector<float> con(n), sigma2(n);
  cumulative_->glm().contrast().read(device_.queue(), con, static_cast<size_t>(published_contrast_) * n);
  cumulative_->glm().sigma2().read(device_.queue(), sigma2);
  for (size_t v = 0; v < n; ++v) {
    con[v] = sigma2[v] > 0 ? con[v] / std::sqrt(sigma2[v]) : std::numeric_limits<float>::quiet_NaN();
  }
  return con;
}

void RunPipeline::run_qa(TrResult& r) {
  if (!config_.qa || qa_off_) return;
  if (!qa_) {
    try {
      std::vector<uint8_t> mask;
      std::string source;
      if (!config_.qa_mask.empty()) {
        const Image image = read_nifti(config_.qa_mask);
        ImageHeader g = grid_;
        g.num_volumes = 1;
        require_same_grid(g, "the run", image.header(), config_.qa_mask);
        const auto v = image.volume(0);
        mask.resize(v.size());
        std::transform(v.begin(), v.end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
        source = config_.qa_mask;
      } else {
        ImageHeader g = grid_;
        g.num_volumes = 1;
        mask = compute_brain_mask(device_, Image(g, raw_ring_.read_volume(r.index))).inside;
        source = fmt::format("brain mask of volume {}", r.index);
      }
      LiveQaOptions o = config_.qa_options;
      o.sliding_window = config_.glm_window;
      qa_ = std::make_unique<LiveQa>(device_, grid_, std::move(mask), o, config_.ring, tr_s_, atlas_grey_);
      spdlog::info(
          "run {}: QA on ({}, {} carpet rows{})", run_, source, qa_->carpet_rows(),
          qa_->carpet_split() > 0 ? fmt::format(", the first {} in the atlas's regions", qa_->carpet_split()) : "");
      qa_mask_source_ = std::move(source);
    } catch (const std::exception& e) {
      qa_off_ = true;
      spdlog::error("run {}: QA off: {}", run_, e.what());
      return;
    }
  }
  guarded("qa", r, [&] {
    auto sample =
        std::make_shared<LiveQaSample>(qa_->update(raw_ring_, r.index, r.motion ? &r.motion->params : nullptr));
    // CNR of the published contrast, with the tSNR map's cadence: c'beta / residual SD of the cumulative GLM.
    const bool in_design = design_ && r.index < design_->x.rows();
    if (cumulative_ && in_design && published_contrast_ >= 0 && !sample->tsnr_map.empty() &&
        cumulative_->volumes() > 0) {
      sample->cnr_map = cnr_map();
      qa_cnr_p95_ = quantile_in_mask(sample->cnr_map, qa_->mask(), 0.95);
    }
    sample->cnr_p95 = qa_cnr_p95_;
    for (const QaAlarm& a : sample->alarms) {
      spdlog::warn("run {} volume {}: QA alarm {}: {:.4g} against {:.4g}{}", run_, a.volume, a.metric, a.value,
                   a.threshold, a.where.empty() ? "" : " (" + a.where + ")");
    }
    last_qa_ = sample;
    r.qa = std::move(sample);
  });
}

void RunPipeline::read_maps(TrResult& r) {
  const int64_t index = r.index;
  const int64_t slot = raw_ring_.slot_of(index);
  const bool in_design = design_ && index < design_->x.rows();
  r.conditions = conditions_;
  if (in_design) {
    r.design_columns = design_columns_;
    r.design_row.resize(static_cast<size_t>(design_->x.cols()));
    for (Eigen::Index j = 0; j < design_->x.cols(); ++j) r.design_row[static_cast<size_t>(j)] = design_->x(index, j);
    if (config_.glm_motion_regressors && motion_ && r.motion) {
      // The motion columns are zero in design_ and filled per TR in the GLMs' copies: report what they hold.
      const auto& p = r.motion->params;
      const std::array<double, 6> motion{p.translation_mm[0], p.translation_mm[1], p.translation_mm[2],
                                         p.rotation_deg[0],   p.rotation_deg[1],   p.rotation_deg[2]};
      size_t k = 0;
      for (size_t j = 0; j < design_->columns.size() && k < motion.size(); ++j) {
        if (design_->columns[j].kind == DesignColumn::Kind::kConfound) r.design_row[j] = motion[k++];
      }
    }
  }
  if (roi_labels_) {
    r.roi_labels = roi_labels_;
    r.roi_labels_frame = roi_label_messages_++ % kRoiLabelsEvery == 0;
  }
  auto q = device_.queue();
  const auto n = static_cast<size_t>(voxels_);
  guarded("read-back", r, [&] {
    r.volume.resize(n);
    raw_ring_.data().read(q, r.volume, static_cast<size_t>(slot) * n);
    if (cumulative_ && in_design && published_contrast_ >= 0) {
      r.map_name = contrasts_.empty() ? "" : contrasts_[0].name;
      int t_index = 0;
      for (const GlmContrast& c : contrasts_) {
        if (c.is_f()) continue;
        if (t_index++ == published_contrast_) r.map_name = c.name;
      }
      r.t_map.resize(n);
      cumulative_->glm().t().read(q, r.t_map, static_cast<size_t>(published_contrast_) * n);
      if (sliding_) {
        r.sliding_t_map.resize(n);
        sliding_->glm().t().read(q, r.sliding_t_map, static_cast<size_t>(published_contrast_) * n);
      }
    }
    if (cca_ && index + 1 >= cca_->minimum_volumes()) r.cca_map = cca_map_.read_all(q);
    if (seed_) r.seed_map = seed_->read(seed_->sliding_z());
    if (atlas_) {
      const Eigen::MatrixXd& m = atlas_->sliding_r();
      r.rois_in_atlas = m.rows();
      r.regions = regions_;
      r.connectivity.resize(static_cast<size_t>(m.size()));
      for (Eigen::Index i = 0; i < m.rows(); ++i) {
        for (Eigen::Index j = 0; j < m.cols(); ++j)
          r.connectivity[static_cast<size_t>(i * m.cols() + j)] = float(m(i, j));
      }
    }
  });
}

void RunPipeline::finish() {
  if (const std::function<void()> write = final_maps()) write();
}

std::function<void()> RunPipeline::final_maps() {
  if (finished_ || analysed_ == 0) return {};
  finished_ = true;
  auto q = device_.queue();
  const auto n = static_cast<size_t>(voxels_);
  // Read back here (the device's queue belongs to the caller's thread); written by the returned function.
  std::vector<std::pair<std::string, std::vector<float>>> maps;
  if (cumulative_ && cumulative_->volumes() > 0) {
    const std::vector<float> t = cumulative_->glm().t().read_all(q);
    int k = 0;
    for (const GlmContrast& c : contrasts_) {
      if (c.is_f()) continue;
      maps.emplace_back(fmt::format("glm_cumulative_{}_t.nii.gz", c.name),
                        std::vector<float>(t.begin() + static_cast<std::ptrdiff_t>(k * n),
                                           t.begin() + static_cast<std::ptrdiff_t>((k + 1) * n)));
      ++k;
    }
  }
  if (cca_) maps.emplace_back("cca.nii.gz", cca_map_.read_all(q));
  if (seed_) {
    maps.emplace_back("seed_cumulative_z.nii.gz", seed_->read(seed_->cumulative_z()));
    maps.emplace_back("seed_sliding_z.nii.gz", seed_->read(seed_->sliding_z()));
  }
  std::optional<std::string> matrix;  // connectivity_cumulative_r.tsv
  if (atlas_) {
    const RoiSet& rois = atlas_->rois();
    std::string text;
    for (int64_t i = 0; i < rois.size(); ++i) text += (i ? "\t" : "") + rois.regions[static_cast<size_t>(i)].name;
    text += "\n";
    const Eigen::MatrixXd& m = atlas_->cumulative_r();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      for (Eigen::Index j = 0; j < m.cols(); ++j) text += (j ? "\t" : "") + number(m(i, j));
      text += "\n";
    }
    matrix = std::move(text);
  }
  std::optional<QaRun> qa;
  if (qa_) {
    try {
      qa = qa_->run_record(raw_ring_, run_);
      qa->mask_source = qa_mask_source_;
      if (cumulative_ && cumulative_->volumes() > 0 && published_contrast_ >= 0) {
        qa->cnr = cnr_map();
        int t_index = 0;
        for (const GlmContrast& c : contrasts_) {
          if (c.is_f()) continue;
          if (t_index++ == published_contrast_) qa->cnr_contrast = c.name;
        }
      }
    } catch (const std::exception& e) {
      spdlog::error("run {}: the QA record could not be read back: {}", run_, e.what());
    }
  }
  return [maps = std::move(maps), matrix = std::move(matrix), qa = std::move(qa), grid = grid_, run = run_,
          dir = run_dir_]() mutable {
    int failed = 0;  // files not written: each is tried, whatever happened to the others
    if (qa) {
      const std::filesystem::path path = dir / "qa_report.html";
      if (!write_output(path, "run " + run, [&] {
            io::OutputSet outputs;
            write_qa_files(*qa, dir.string() + "/", outputs);
            outputs.commit();
          })) {
        ++failed;
      }
    }
    for (auto& [name, data] : maps) {
      const std::filesystem::path path = dir / name;
      if (!write_output(path, "run " + run, [&] { write_map(path, grid, std::move(data)); })) ++failed;
    }
    if (matrix) {
      const std::filesystem::path path = dir / "connectivity_cumulative_r.tsv";
      if (!write_output(path, "run " + run, [&] { write_text_atomically(path, *matrix); })) ++failed;
    }
    if (failed == 0) {
      spdlog::info("run {}: final maps written to {}", run, dir.string());
    } else {
      spdlog::error("run {}: {} of the final maps and matrices in {} not written (above)", run, failed, dir.string());
    }
  };
}

}  // namespace rtf::stream
