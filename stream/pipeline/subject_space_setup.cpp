// SubjectSpaceSetup: the worker thread (session-wide preparation, then one registration per run), its timing reports
// and files.
#include "stream/pipeline/subject_space_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "core/io/atomic_file.hpp"
#include "core/registration/itk_transform.hpp"
#include "core/registration/subject_space.hpp"
#include "stream/output/output_failures.hpp"

namespace rtf::stream {

namespace {

// Thrown from progress reports to abandon a registration when the server stops.
struct Stopped : std::runtime_error {
  Stopped() : std::runtime_error("the server is stopping") {}
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `body` and appends {"step": name, "seconds": s} to `steps`.
template <typename F>
void timed(nlohmann::json& steps, const char* name, F&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  steps.push_back({{"step", name}, {"seconds", seconds_since(start)}});
}

std::string step_summary(const nlohmann::json& steps) {
  std::string out;
  for (const auto& s : steps) {
    out +=
        fmt::format("{}{} {:.3f} s", out.empty() ? "" : ", ", s["step"].get<std::string>(), s["seconds"].get<double>());
  }
  return out;
}

SubjectSpaceOptions options_from(const PipelineConfig& c) {
  SubjectSpaceOptions o;
  if (!c.epi_levels.empty()) {
    o.epi_to_t1.levels = parse_linear_levels(c.epi_levels);
    o.epi_to_template.levels = o.epi_to_t1.levels;
  }
  o.normalization.nonlinear = c.normalization_warp;
  if (!c.normalization_levels.empty()) o.normalization.warp.levels = parse_nonlinear_levels(c.normalization_levels);
  return o;
}

}  // namespace

SubjectSpaceSetup::SubjectSpaceSetup(const Device& device, PipelineConfig config, std::filesystem::path session_dir)
    : config_(std::move(config)), session_dir_(std::move(session_dir)) {
  thread_ = std::thread([this, info = device.info()] { work(info); });
}

SubjectSpaceSetup::~SubjectSpaceSetup() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
  if (writer_.joinable()) writer_.join();
}

void SubjectSpaceSetup::check_stop() const {
  if (stop_.load()) throw Stopped();
}

void SubjectSpaceSetup::request(const std::string& run, Image reference, int64_t reference_index,
                                const std::filesystem::path& run_dir) {
  {
    std::lock_guard lock(mutex_);
    results_.erase(run);
    requests_.push_back({run, std::move(reference), reference_index, run_dir, std::chrono::steady_clock::now()});
  }
  changed_.notify_all();
}

void SubjectSpaceSetup::warm(const ImageHeader& grid) {
  {
    std::lock_guard lock(mutex_);
    Request r;
    r.reference = Image(grid);
    r.warm = true;
    requests_.push_back(std::move(r));
  }
  changed_.notify_all();
}

std::shared_ptr<const SubjectSpaceResult> SubjectSpaceSetup::result(const std::string& run) const {
  std::lock_guard lock(mutex_);
  const auto it = results_.find(run);
  return it == results_.end() ? nullptr : it->second;
}

std::shared_ptr<const SubjectSpaceResult> SubjectSpaceSetup::wait(const std::string& run) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return stop_.load() || results_.count(run) > 0; });
  const auto it = results_.find(run);
  return it == results_.end() ? nullptr : it->second;
}

void SubjectSpaceSetup::work(const DeviceInfo& info) {
  prepare(info);
  // The session's files on a thread of their own (a 1 mm warp takes seconds to compress): a run's registration never
  // waits for them. They read only what prepare() left, which nothing changes any more.
  writer_ = std::thread([this, report = session_report_] { write_session_files(report); });
  while (true) {
    std::unique_lock lock(mutex_);
    if (stop_) return;
    changed_.wait(lock, [&] { return stop_.load() || !requests_.empty(); });
    if (stop_) return;
    Request r = std::move(requests_.front());
    requests_.pop_front();
    lock.unlock();
    if (r.warm) {
      warm_run(r.reference.header());
      continue;
    }
    if (hold_) hold_(r.run);
    std::shared_ptr<const SubjectSpaceResult> result = register_run(r);
    lock.lock();
    results_[r.run] = std::move(result);
    lock.unlock();
    changed_.notify_all();
  }
}

void SubjectSpaceSetup::prepare(const DeviceInfo& info) {
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json steps = nlohmann::json::array();
  session_report_ = {{"t1", config_.t1}, {"normalization", config_.normalization}};
  try {
    timed(steps, "open_device", [&] { device_ = std::make_unique<Device>(info); });
    session_report_["device"] = device_->info().label();
    if (!config_.t1.empty()) timed(steps, "read_t1", [&] { t1_ = read_anatomy(config_.t1, "T1"); });
    if (config_.normalization.empty()) {
      timed(steps, "read_template", [&] {
        const std::filesystem::path path = registration_template_path(config_);
        session_report_["template"] = path.string();
        template_ = read_anatomy(path, "template");
      });
    }
    if (!config_.atlas.empty()) {
      timed(steps, "read_atlas", [&] {
        try {
          atlas_ = load_atlas(config_);
        } catch (const std::exception& e) {
          atlas_error_ = e.what();
        }
      });
    }
    if (t1_ && !config_.normalization.empty()) {
      timed(steps, "read_normalization", [&] { normalization_ = read_normalization(config_.normalization); });
    } else if (t1_) {
      spdlog::info("subject space: normalising the T1 {} to the template {} ({}) on a second queue of {}", config_.t1,
                   session_report_["template"].get<std::string>(),
                   config_.normalization_warp ? "affine + non-linear" : "affine only", device_->info().label());
      const SubjectSpaceOptions options = options_from(config_);
      NormalizationProgress progress;
      progress.affine = [this](const LinearLevelReport&, int) { check_stop(); };
      progress.nonlinear = [this](const NonlinearLevelReport&, int) { check_stop(); };
      timed(steps, "t1_to_template", [&] {
        normalization_ = normalize(*device_, *t1_, *template_, options.normalization, std::nullopt, progress);
      });
      normalization_computed_ = true;
      session_report_["affine_ncc"] = normalization_->affine_report.ncc;
      if (normalization_->inverse_warp) {
        session_report_["inverse_error_mm"] = {{"max", normalization_->inverse_error_max_mm},
                                               {"mean", normalization_->inverse_error_mean_mm}};
        session_report_["jacobian"] = {{"min", normalization_->jacobian_summary.min},
                                       {"folded_in_brain", normalization_->jacobian_summary.folded_in_mask}};
      }
    }
    session_report_["status"] = "ready";
  } catch (const std::exception& e) {
    prepare_failure_ = e.what();
    session_report_["status"] = "failed";
    session_report_["failure"] = prepare_failure_;
    if (!stop_) {
      spdlog::error(
          "subject space: the set-up failed: {}; the runs go on without subject-space ROIs (no atlas, seed "
          "or feedback ROIs)",
          prepare_failure_);
    }
  }
  session_report_["steps"] = steps;
  session_report_["seconds"] = seconds_since(start);
  if (prepare_failure_.empty()) {
    spdlog::info("subject space: session set-up done in {:.3f} s ({})", seconds_since(start), step_summary(steps));
  }
}

void SubjectSpaceSetup::warm_run(const ImageHeader& grid_in) {
  if (!prepare_failure_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  const ProgramCacheStats before = device_->programs().stats();
  try {
    ImageHeader grid = grid_in;
    grid.num_volumes = 1;
    const Image& anatomy = t1_ ? *t1_ : *template_;
    // The grid centred on the anatomy (the kernels depend on the grid's dimensions only), so that they overlap.
    auto centre = [](const ImageHeader& h) {
      return (h.affine * Eigen::Vector4d(0.5 * static_cast<double>(h.dims[0] - 1),
                                         0.5 * static_cast<double>(h.dims[1] - 1),
                                         0.5 * static_cast<double>(h.dims[2] - 1), 1.0))
          .head<3>()
          .eval();
    };
    grid.affine.topRightCorner<3, 1>() += centre(anatomy.header()) - centre(grid);
    const Image epi = pull_to_grid(*device_, anatomy, grid, {});  // any image on the grid builds the same kernels
    const SubjectSpaceOptions options = options_from(config_);
    const LinearRegistrationResult reg =
        register_epi(*device_, epi, anatomy, t1_ ? options.epi_to_t1 : options.epi_to_template,
                     [this](const LinearLevelReport&, int) { check_stop(); });
    place_rois(
        config_, grid, atlas_ ? &*atlas_ : nullptr, atlas_error_,
        TemplateGeometry{epi_to_template_chain(reg.transform, t1_ ? &*normalization_ : nullptr), device_.get(), true});
    const ProgramCacheStats after = device_->programs().stats();
    spdlog::info(
        "subject space: registration kernels built for the {}x{}x{} grid in {:.2f} s ({} compiled, {} from "
        "the disk cache)",
        grid.dims[0], grid.dims[1], grid.dims[2], seconds_since(start), after.compiles - before.compiles,
        after.disk_hits - before.disk_hits);
  } catch (const std::exception& e) {
    if (!stop_) spdlog::warn("subject space: warming the registration up failed: {}", e.what());
  }
}

void SubjectSpaceSetup::write_session_files(nlohmann::json report) {
  // Each file that cannot be written is logged and reported (output_failures); the live path never waits for these.
  const std::string what = "subject space: the session's transforms";
  const std::filesystem::path dir = session_dir_ / "subject_space";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // a failure shows in each file's error
  if (normalization_computed_ && normalization_) {
    // The T1 -> template result in `rtfmri normalize`'s layout: a later session can take it as
    // [registration] normalization = ".../subject_space/t1_to_template".
    const auto start = std::chrono::steady_clock::now();
    const std::string prefix = (dir / "t1_to_template").string();
    if (write_output(prefix, what, [&] { write_normalization(prefix, *normalization_); })) {
      report["written"] = prefix;
      report["write_seconds"] = seconds_since(start);
    }
  }
  const std::filesystem::path json = dir / "normalization.json";
  write_output(json, what, [&] { write_text_atomically(json, report.dump(2) + "\n"); });
}

std::shared_ptr<SubjectSpaceResult> SubjectSpaceSetup::register_run(const Request& r) {
  auto result = std::make_shared<SubjectSpaceResult>();
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json steps = nlohmann::json::array();
  steps.push_back({{"step", "queued"}, {"seconds", std::chrono::duration<double>(start - r.requested).count()}});
  nlohmann::json& report = result->report;
  report = {{"run", r.run}, {"reference_volume", r.reference_index}, {"session", session_report_}};
  const ImageHeader& grid = r.reference.header();
  try {
    if (!prepare_failure_.empty()) throw std::runtime_error("the session's set-up failed: " + prepare_failure_);
    const SubjectSpaceOptions options = options_from(config_);
    const bool with_t1 = t1_.has_value();
    const char* step = with_t1 ? "epi_to_t1" : "epi_to_template";
    LinearRegistrationResult reg;
    timed(steps, step, [&] {
      reg = register_epi(*device_, r.reference, with_t1 ? *t1_ : *template_,
                         with_t1 ? options.epi_to_t1 : options.epi_to_template,
                         [this](const LinearLevelReport&, int) { check_stop(); });
    });
    report["registration"] = {{"anatomy", with_t1 ? "t1" : "template"},
                              {"dof", with_t1 ? options.epi_to_t1.dof : options.epi_to_template.dof},
                              {"mi_start", reg.initial_mi},
                              {"mi", reg.mi},
                              {"iterations", reg.iterations},
                              {"converged", reg.converged}};
    if (!reg.converged) {
      spdlog::warn(
          "subject space, run {}: the EPI registration did not meet its tolerance ({} iterations); its "
          "result is used",
          r.run, reg.iterations);
    }
    const std::vector<SpatialTransform> chain =
        epi_to_template_chain(reg.transform, with_t1 ? &*normalization_ : nullptr);
    timed(steps, "place_rois", [&] {
      result->rois = place_rois(config_, grid, atlas_ ? &*atlas_ : nullptr, atlas_error_,
                                TemplateGeometry{chain, device_.get(), true});
    });
    timed(steps, "write", [&] {
      // For checking and for viewers: a file that cannot be written is reported; the ROIs are used all the same.
      std::error_code ec;
      std::filesystem::create_directories(r.run_dir, ec);  // a failure shows in each file's error
      const std::string file = fmt::format("{}_affine.txt", step);
      const std::filesystem::path path = r.run_dir / file;
      if (write_output(path, "subject space, run " + r.run, [&] { write_itk_affine(path, reg.transform); })) {
        report["transform"] = file;
      }
      write_placed_rois(r.run_dir, grid, result->rois, true);
    });
    report["status"] = "ready";
  } catch (const std::exception& e) {
    result->failure = e.what();
    report["status"] = "failed";
    report["failure"] = result->failure;
  }
  result->seconds = seconds_since(r.requested);
  report["steps"] = steps;
  report["seconds_after_reference"] = result->seconds;
  report["seconds_of_work"] = seconds_since(start);
  const std::filesystem::path json = r.run_dir / "subject_space.json";
  write_output(json, "subject space, run " + r.run, [&] {
    std::filesystem::create_directories(r.run_dir);
    write_text_atomically(json, report.dump(2) + "\n");
  });
  if (!result->failure.empty()) {
    if (!stop_ && prepare_failure_.empty()) {  // a failed session set-up was logged once already
      spdlog::error(
          "subject space, run {}: no subject-space ROIs: {}; the run goes on without ROI outputs (atlas, "
          "seed, feedback ROIs)",
          r.run, result->failure);
    }
  } else {
    spdlog::info("subject space, run {}: ROIs on the EPI grid {:.3f} s after the reference volume ({})", r.run,
                 result->seconds, step_summary(steps));
  }
  return result;
}

}  // namespace rtf::stream
