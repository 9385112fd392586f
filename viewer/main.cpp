// rtfmri-view: the live viewer. --connect follows a running server's results stream (docs/protocol.md §8);
// --replay browses a recorded session; --snapshot renders N TRs to a PNG and exits (headless under Xvfb).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "viewer/result_subscriber.hpp"
#include "viewer/session_source.hpp"
#include "viewer/viewer_app.hpp"

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"rtfmri-view: live viewer of an rtfmri server (docs/viewer.md)"};
  std::string connect, replay, run, snapshot;
  rtf::viewer::ViewerOptions options;
  app.add_option("--connect", connect,
                 "Results stream of a running `rtfmri run` (its --results-pub), e.g. tcp://127.0.0.1:5556; reconnects "
                 "by itself when the server restarts");
  app.add_option("--replay", replay, "Browse a recorded session directory instead (no server; a TR slider)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--run", run, "With --replay: the run to show (default: the first)");
  app.add_option("--snapshot", snapshot,
                 "Render headless until --after TRs were shown, write this PNG (and "
                 "PNG.json with the panels' rectangles), exit");
  app.add_option("--after", options.after, "TRs to wait for before --snapshot")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--timeout", options.timeout_s, "With --snapshot: seconds to wait for the TRs before failing")
      ->capture_default_str();
  app.add_flag("--follow-peak", options.follow_peak,
               "Keep the crosshair on the shown map's maximum (until a slice is clicked)");
  app.add_flag("--goto-roi", options.goto_roi,
               "Put the crosshair on the first ROI (the server's roi_labels) when the ROIs arrive");
  app.add_flag("!--no-roi-outlines", options.roi_outlines, "Do not draw the ROIs' outlines over the slices");
  app.add_option("--width", options.width, "Window width (pixels)")
      ->check(CLI::Range(640, 8192))
      ->capture_default_str();
  app.add_option("--height", options.height, "Window height (pixels)")
      ->check(CLI::Range(480, 8192))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (connect.empty() == replay.empty()) {
    std::fprintf(stderr, "rtfmri-view: give exactly one of --connect ADDRESS or --replay SESSION_DIR\n");
    return 2;
  }
  if (!connect.empty() && connect.rfind("tcp://", 0) != 0 && connect.rfind("ipc://", 0) != 0) {
    std::fprintf(stderr, "rtfmri-view: --connect wants a ZeroMQ address like tcp://HOST:PORT, got '%s'\n",
                 connect.c_str());
    return 2;
  }
  options.snapshot = snapshot;
  rtf::viewer::SharedViewerData shared;
  std::unique_ptr<rtf::viewer::ResultSubscriber> subscriber;
  try {
    if (!replay.empty()) {
      rtf::viewer::RecordedSession session = rtf::viewer::load_recorded_session(replay, run);
      spdlog::info("replay: run {} with {} TRs, {} volumes", session.run, session.updates.size(),
                   session.volumes.size());
      options.replay = true;
      options.replay_volumes = std::move(session.volumes);
      for (auto& u : session.updates) shared.apply(std::move(u));
      options.connection_status = [replay] { return "replay of " + replay; };
    } else {
      subscriber = std::make_unique<rtf::viewer::ResultSubscriber>(connect, shared);
      options.connection_status = [s = subscriber.get()] {
        const auto st = s->status();
        std::string line = "server " + s->address() + ": ";
        if (!st.connected) {
          line += st.messages > 0 ? "connection lost, reconnecting" : "connecting";
        } else if (st.seconds_since_last < 0) {
          line += "connected, waiting for results";
        } else {
          char text[96];
          std::snprintf(text, sizeof text, "%lld messages, last %.1f s ago", static_cast<long long>(st.messages),
                        st.seconds_since_last);
          line += text;
        }
        if (st.bad_messages > 0) line += "; " + std::to_string(st.bad_messages) + " unreadable: " + st.last_error;
        return line;
      };
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtfmri-view: %s\n", e.what());
    return 1;
  }
  return rtf::viewer::run_viewer(shared, std::move(options));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtfmri-view: %s\n", e.what());
    return 1;
  }
}
