// RunPipeline: per-run set-up of each stage from the config and the run's grid, the per-TR sequence, the run's files.
#include "stream/pipeline/run_pipeline.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "core/connectivity/atlas.hpp"
#include "core/connectivity/seed.hpp"
#include "core/connectivity/window.hpp"
#include "core/design/contrast.hpp"
#include "core/device/cl_error.hpp"
#include "core/io/nifti_io.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/resample.hpp"

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

// Voxels of a region spec on the grid.
std::vector<int32_t> roi_voxels(const RoiSpec& spec, const ImageHeader& grid, const RoiSet* atlas) {
  if (spec.sphere_mm) {
    const auto& c = *spec.sphere_mm;
    return seed_from_sphere(grid, Eigen::Vector3d(c[0], c[1], c[2]), spec.radius_mm);
  }
  if (!spec.mask.empty()) return seed_from_mask(read_nifti(spec.mask), grid);
  if (atlas == nullptr)
    throw std::invalid_argument(fmt::format("ROI {}: an atlas region needs [connectivity] atlas", spec.name));
  for (int64_t r = 0; r < atlas->size(); ++r) {
    if (atlas->regions[static_cast<size_t>(r)].name != spec.atlas_region) continue;
    std::vector<int32_t> v;
    for (size_t i = 0; i < atlas->roi_of_voxel.size(); ++i) {
      if (atlas->roi_of_voxel[i] == r) v.push_back(static_cast<int32_t>(i));
    }
    if (v.empty())
      throw std::invalid_argument(fmt::format("ROI {}: the atlas region has no voxel on this grid", spec.name));
    return v;
  }
  throw std::invalid_argument(fmt::format("ROI {}: no atlas region named '{}'", spec.name, spec.atlas_region));
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
                         std::filesystem::path run_dir)
    : device_(device),
      config_(config),
      grid_(grid),
      run_(std::move(run)),
      run_dir_(std::move(run_dir)),
      voxels_(grid.voxels_per_volume()),
      raw_ring_(device, voxels_, config.ring) {
  tr_s_ = config_.tr_s > 0 ? config_.tr_s : grid_.tr_s;
  std::filesystem::create_directories(run_dir_);
  if (config_.motion) {
    LiveMotionOptions m;
    if (config_.motion_reference.find_first_not_of("0123456789") == std::string::npos) {
      m.reference_index = std::stoll(config_.motion_reference);
    } else {
      m.reference_image = read_nifti(config_.motion_reference);
    }
    try {
      motion_ = std::make_unique<LiveMotionCorrection>(device, grid_, std::move(m));
      const std::filesystem::path path = run_dir_ / "motion.tsv";
      std::error_code ec;
      const bool fresh = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
      motion_log_ = std::fopen(path.c_str(), "ae");
      if (motion_log_ == nullptr) spdlog::warn("cannot write {}", path.string());
      if (motion_log_ != nullptr && fresh) std::fputs(motion_tsv_header().c_str(), motion_log_);
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
  setup_connectivity();
  setup_feedback();
  std::string stages;
  for (const std::string& s : active_stages()) stages += (stages.empty() ? "" : ", ") + s;
  spdlog::info("run {}: {}x{}x{} voxels, TR {} s; stages: {}", run_, grid_.dims[0], grid_.dims[1], grid_.dims[2], tr_s_,
               stages);
}

RunPipeline::~RunPipeline() {
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("run {}: writing the final maps failed: {}", run_, e.what());
  }
  if (feedback_log_ != nullptr) std::fclose(feedback_log_);
  if (motion_log_ != nullptr) std::fclose(motion_log_);
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

void RunPipeline::setup_connectivity() {
  ConnectivityOptions o;
  o.window = config_.connectivity_window;
  if (!config_.atlas.empty()) {
    try {
      const LabelAtlas atlas =
          config_.atlas == "aal"
              ? read_aal(config_.data_dir)
              : read_atlas(config_.atlas, config_.atlas_names.empty()
                                              ? std::nullopt
                                              : std::optional<std::filesystem::path>(config_.atlas_names));
      // An atlas in template space reaches a scanner-space EPI through the inverse of the template -> EPI transform.
      Eigen::Matrix4d to_atlas = Eigen::Matrix4d::Identity();
      if (!config_.atlas_transform.empty()) {
        to_atlas = inverse_affine(read_itk_affine(config_.atlas_transform), config_.atlas_transform);
      }
      const RoiSet rois = rois_on_grid(atlas, grid_, AtlasPlacement::kResample, to_atlas);
      if (!config_.atlas_transform.empty()) {
        // The ROIs as the run sees them, for checking and for viewers: the atlas label per voxel, 0 outside.
        std::vector<float> labels(rois.roi_of_voxel.size(), 0.0f);
        for (size_t v = 0; v < labels.size(); ++v) {
          const int32_t roi = rois.roi_of_voxel[v];
          if (roi >= 0) labels[v] = static_cast<float>(rois.regions[static_cast<size_t>(roi)].label);
        }
        ImageHeader h = grid_;
        h.num_volumes = 1;
        h.tr_s = 0.0;
        write_nifti(run_dir_ / "atlas_in_epi.nii.gz", Image(h, std::move(labels)), DataType::kInt16);
        spdlog::info("run {}: atlas pulled onto the EPI through {} ({} of {} regions present)", run_,
                     config_.atlas_transform, rois.present(), rois.size());
      }
      if (rois.present() < 2) throw std::invalid_argument("fewer than two atlas regions on this grid");
      atlas_ = std::make_unique<RoiCorrelation>(device_, rois, config_.ring, o);
      std::vector<std::string> names;
      for (const AtlasRegion& region : rois.regions) names.push_back(region.name);
      regions_ = std::make_shared<const std::vector<std::string>>(std::move(names));
    } catch (const std::exception& e) {
      spdlog::error("run {}: ROI x ROI connectivity off: {}", run_, e.what());
    }
  }
  if (config_.seed) {
    try {
      const auto voxels = roi_voxels(*config_.seed, grid_, atlas_ ? &atlas_->rois() : nullptr);
      seed_ = std::make_unique<SeedCorrelation>(device_, grid_, voxels, config_.ring, o);
    } catch (const std::exception& e) {
      spdlog::error("run {}: seed map off: {}", run_, e.what());
    }
  }
}

void RunPipeline::setup_feedback() {
  if (!config_.feedback || config_.feedback_rois.empty()) return;
  try {
    std::vector<int32_t> roi_of_voxel(static_cast<size_t>(voxels_), -1);
    for (size_t r = 0; r < config_.feedback_rois.size(); ++r) {
      const RoiSpec& spec = config_.feedback_rois[r];
      for (int32_t v : roi_voxels(spec, grid_, atlas_ ? &atlas_->rois() : nullptr)) {
        if (roi_of_voxel[static_cast<size_t>(v)] >= 0) {
          throw std::invalid_argument(
              fmt::format("feedback ROIs {} and {} overlap", spec.name,
                          config_.feedback_rois[static_cast<size_t>(roi_of_voxel[static_cast<size_t>(v)])].name));
        }
        roi_of_voxel[static_cast<size_t>(v)] = static_cast<int32_t>(r);
      }
      feedback_roi_names_.push_back(spec.name);
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
    feedback_log_ = std::fopen((run_dir_ / "feedback.tsv").c_str(), "we");
    if (feedback_log_ != nullptr) {
      std::string header = "volume\tvalue\tstatus\tcondition";
      for (const std::string& n : feedback_roi_names_) header += "\t" + n;
      std::fputs((header + "\n").c_str(), feedback_log_);
    }
  } catch (const std::exception& e) {
    spdlog::error("run {}: feedback off: {}", run_, e.what());
    feedback_rois_.reset();
    feedback_.reset();
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
  return s;
}

void RunPipeline::upload(int64_t index, std::span<const std::byte> payload, DataType type) {
  const ClEvent done = raw_ring_.push(index, payload, type);
  const cl_event e = done.get();
  RTF_CL_CHECK(clWaitForEvents(1, &e));
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
  r.dims = grid_.dims;
  r.affine = grid_.affine;
  ++analysed_;
  if (motion_) {
    guarded("motion", r, [&] { r.motion = motion_->process(raw_ring_, index); });
    r.motion_ns = now_ns();
    if (r.motion && !r.motion->converged) {
      spdlog::warn("run {} volume {}: motion flagged: {}", run_, index, r.motion->failure);
    }
    if (r.motion && motion_log_ != nullptr) {
      std::fputs(motion_tsv_row(index, *r.motion).c_str(), motion_log_);
      std::fflush(motion_log_);
    }
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
    if (feedback_log_ != nullptr) {
      std::string row = fmt::format("{}\t{}\t{}\t{}", index, r.feedback ? number(r.feedback->value) : "n/a",
                                    r.feedback ? std::string(feedback_status_name(r.feedback->status)) : "off",
                                    r.feedback ? std::string(volume_condition_name(r.feedback->condition)) : "n/a");
      for (double m : r.roi_means) row += "\t" + number(m);
      std::fputs((row + "\n").c_str(), feedback_log_);
      std::fflush(feedback_log_);
    }
  }
  return r;
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
  if (finished_ || analysed_ == 0) return;
  finished_ = true;
  auto q = device_.queue();
  const auto n = static_cast<size_t>(voxels_);
  if (cumulative_ && cumulative_->volumes() > 0) {
    const std::vector<float> t = cumulative_->glm().t().read_all(q);
    int k = 0;
    for (const GlmContrast& c : contrasts_) {
      if (c.is_f()) continue;
      write_map(run_dir_ / fmt::format("glm_cumulative_{}_t.nii.gz", c.name), grid_,
                std::vector<float>(t.begin() + static_cast<std::ptrdiff_t>(k * n),
                                   t.begin() + static_cast<std::ptrdiff_t>((k + 1) * n)));
      ++k;
    }
  }
  if (cca_) write_map(run_dir_ / "cca.nii.gz", grid_, cca_map_.read_all(q));
  if (seed_) {
    write_map(run_dir_ / "seed_cumulative_z.nii.gz", grid_, seed_->read(seed_->cumulative_z()));
    write_map(run_dir_ / "seed_sliding_z.nii.gz", grid_, seed_->read(seed_->sliding_z()));
  }
  if (atlas_) {
    std::ofstream f(run_dir_ / "connectivity_cumulative_r.tsv");
    const RoiSet& rois = atlas_->rois();
    for (int64_t i = 0; i < rois.size(); ++i) f << (i ? "\t" : "") << rois.regions[static_cast<size_t>(i)].name;
    f << "\n";
    const Eigen::MatrixXd& m = atlas_->cumulative_r();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      for (Eigen::Index j = 0; j < m.cols(); ++j) f << (j ? "\t" : "") << number(m(i, j));
      f << "\n";
    }
  }
  spdlog::info("run {}: final maps written to {}", run_, run_dir_.string());
}

}  // namespace rtf::stream
