// SubjectSpaceSetup: the registration behind subject-space ROIs, on its own thread and its own Device (an OpenCL
// context and queues of the same device), so that ingest and the live thread's per-TR stages never wait behind its
// kernels. At server start it reads the T1, the template and the atlas and normalises the T1 to the template (or reads
// an earlier `rtfmri normalize`'s result); then, for each run, once the live thread hands it the run's reference EPI
// volume, it registers that volume to the T1 (or to the template without a T1), pulls the atlas and the
// template-space ROIs onto the run's grid through the inverse chain, writes the transforms and ROIs into the run's
// directory with a timing report (subject_space.json), and publishes the result, which the run installs on its next
// volume. A failure (a bad T1, a registration that does not converge) becomes the run's result with a clear reason;
// it never throws into the live thread. docs/live.md ("Subject-space ROIs").
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "core/connectivity/atlas.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/normalization.hpp"
#include "stream/pipeline/pipeline_config.hpp"
#include "stream/pipeline/roi_placement.hpp"

namespace rtf::stream {

// What a run gets.
struct SubjectSpaceResult {
  PlacedRois rois;        // valid when `failure` is empty
  std::string failure;    // why there are no subject-space ROIs (the run goes on without ROI outputs)
  nlohmann::json report;  // also runs/<run>/subject_space.json: each step's seconds, the registration's figures
  double seconds = 0.0;   // from the request (the reference volume handed over) to the result
};

class SubjectSpaceSetup {
 public:
  // Starts the worker at once. `device`: the live pipeline's device, whose OpenCL device the worker opens again.
  // `session_dir`: where the session-wide files go (subject_space/). Never throws for bad inputs: they are reported
  // through each run's result.
  SubjectSpaceSetup(const Device& device, PipelineConfig config, std::filesystem::path session_dir);
  // Stops the worker: a registration in progress is abandoned at its next progress report (within one iteration).
  ~SubjectSpaceSetup();
  SubjectSpaceSetup(const SubjectSpaceSetup&) = delete;
  SubjectSpaceSetup& operator=(const SubjectSpaceSetup&) = delete;

  // Queues run `run`'s registration: `reference` is its reference EPI volume (3D, on the run's grid), volume
  // `reference_index` of the run (-1: an image given in the config). A result already there for `run` is dropped.
  void request(const std::string& run, Image reference, int64_t reference_index, const std::filesystem::path& run_dir);

  // Builds the registration's kernels for runs on `grid` (the server's --warm grid) before the first run's request:
  // the template (or T1) resampled onto the grid is registered back to it and the ROIs placed, the results thrown away.
  void warm(const ImageHeader& grid);

  // The result for `run` (null while pending or never requested). Never waits.
  std::shared_ptr<const SubjectSpaceResult> result(const std::string& run) const;
  // Waits for the result for `run` (which must have been requested).
  std::shared_ptr<const SubjectSpaceResult> wait(const std::string& run) const;

  // Tests: called on the worker before each run's registration starts (e.g. to hold it until some volumes went by).
  // Set before the first request.
  void set_hold(std::function<void(const std::string& run)> hold) { hold_ = std::move(hold); }

 private:
  struct Request {
    std::string run;
    Image reference;
    int64_t reference_index = 0;
    std::filesystem::path run_dir;
    std::chrono::steady_clock::time_point requested;
    bool warm = false;  // warm(): build the kernels, keep nothing
  };

  void work(const DeviceInfo& info);
  void prepare(const DeviceInfo& info);
  std::shared_ptr<SubjectSpaceResult> register_run(const Request& request);
  void warm_run(const ImageHeader& grid);
  void write_session_files(nlohmann::json report);
  void check_stop() const;

  PipelineConfig config_;
  std::filesystem::path session_dir_;
  std::function<void(const std::string&)> hold_;

  // Worker state (only the worker touches it after the constructor).
  std::unique_ptr<Device> device_;
  std::optional<Image> t1_, template_;
  std::optional<LabelAtlas> atlas_;
  std::string atlas_error_;
  std::optional<NormalizationResult> normalization_;
  bool normalization_computed_ = false;
  std::string prepare_failure_;
  nlohmann::json session_report_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<Request> requests_;
  std::map<std::string, std::shared_ptr<const SubjectSpaceResult>> results_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::thread writer_;  // the session's files (started by the worker, joined by the destructor after it)
};

}  // namespace rtf::stream
