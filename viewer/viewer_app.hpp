// ViewerApp: the GLFW window, the ImGui frame loop and the panels (slices with overlay, motion, feedback, ROI x ROI
// matrix, latency, counters, QA). All OpenGL work happens on the thread that calls run(). Data come from a
// SharedViewerData filled by the network thread (--connect) or by a recorded session (--replay).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "viewer/shared_viewer_data.hpp"

namespace rtf::viewer {

struct ViewerOptions {
  int width = 1600, height = 1000;
  std::string title = "rtfmri-view";
  std::filesystem::path snapshot;  // non-empty: render until `after` TRs were shown, write this PNG, exit
  int64_t after = 1;
  double timeout_s = 120.0;  // snapshot mode: give up (exit status 1) after this long without `after` TRs
  bool replay = false;       // a recorded session: show a time slider over its TRs
  bool follow_peak = false;  // the crosshair follows the map's maximum until a slice is clicked
  bool goto_roi = false;     // the crosshair goes to the first ROI's centre when ROI labels arrive
  bool roi_outlines = true;  // ROI outlines over the slices
  std::vector<std::vector<float>> replay_volumes;  // replay: the run's volumes (underlay per TR)
  std::function<std::string()> connection_status;  // a line for the status panel
};

// Runs until the window is closed (or the snapshot is written). Returns the process exit status.
int run_viewer(SharedViewerData& shared, ViewerOptions options);

}  // namespace rtf::viewer
