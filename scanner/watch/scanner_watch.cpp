// The watch loop: ready files -> assembler -> protocol-1 volumes -> sender; runs closed by count, idleness or stop.
#include "scanner/watch/scanner_watch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <new>
#include <stdexcept>

#include "stream/sender/volume_encoding.hpp"
#include "stream/server/volume_handler.hpp"

namespace rtf::scanner {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The protocol header of an assembled volume (payload_bytes and checksum are set by seal_volume).
stream::VolumeHeader wire_header(const dicom::AssembledVolume& v, const std::string& session, double tr_s,
                                 DataType type) {
  const ImageHeader& g = v.volume.image.header();
  stream::VolumeHeader h;
  h.session = session;
  h.run = v.run;
  h.index = v.index;
  h.dims = g.dims;
  h.voxel_mm = g.voxel_mm;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) h.affine[static_cast<size_t>(r)][static_cast<size_t>(c)] = g.affine(r, c);
  }
  h.affine[3] = {0, 0, 0, 1};
  h.datatype = type;
  h.tr_s = tr_s;
  h.acquisition_time = static_cast<double>(v.index) * tr_s;
  // Slice times go on the wire only when they are what the protocol carries: one per slice within the TR.
  const auto& times = v.volume.slice_timing_s;
  bool usable = static_cast<int64_t>(times.size()) == g.dims[2];
  for (const double t : times) usable = usable && t >= 0.0 && t < tr_s;
  if (usable) h.slice_timing_s = times;
  return h;
}

}  // namespace

ScannerWatch::ScannerWatch(ScannerWatchOptions options, zmq::context_t& context)
    : options_(std::move(options)),
      watcher_(options_.folder, options_.watch),
      assembler_(options_.assembler),
      sender_(context, options_.sender) {
  if (!stream::valid_id(options_.session)) {
    throw std::invalid_argument(fmt::format("invalid session id '{}'", options_.session));
  }
  if (options_.tr_s < 0) throw std::invalid_argument("the TR must be > 0");
}

void ScannerWatch::stop() {
  stop_.store(true);
  watcher_.stop();
}

void ScannerWatch::send(dicom::AssembledVolume&& v, VolumeTimes times) {
  const double file_tr = v.volume.image.header().tr_s;
  const double tr_s = options_.tr_s > 0 ? options_.tr_s : file_tr;
  if (!(tr_s > 0)) {
    throw std::runtime_error(fmt::format("{} volume {}: the files carry no TR; give one with --tr", v.run, v.index));
  }
  const Image& image = v.volume.image;
  const DataType type = stream::replay_datatype(image);
  stream::OutgoingVolume out;
  out.header = wire_header(v, options_.session, tr_s, type);
  out.payload = stream::encode_voxels(image.data(), type);
  stream::seal_volume(out);
  RunState& state = runs_[v.run];
  ++state.sent;
  state.highest = std::max(state.highest, v.index);
  state.last_volume_s = now_s();
  spdlog::info("{} volume {} ({} file{}) sent", v.run, v.index, v.files.size(), v.files.size() == 1 ? "" : "s");
  const std::pair<std::string, int64_t> key{v.run, v.index};
  sender_.send(std::move(out));
  times.sent_ns = stream::steady_now_ns();
  times_[key] = times;
}

void ScannerWatch::note_skipped(ScannerWatchReport& report, const std::string& reason) {
  ++report.skipped;
  report.skip_reasons.push_back(reason);
  spdlog::warn("skipped: {}", reason);
}

void ScannerWatch::note_acknowledged(ScannerWatchReport& report) {
  const auto& acked = sender_.acknowledged();
  const int64_t now = stream::steady_now_ns();
  for (; acknowledged_seen_ < acked.size(); ++acknowledged_seen_) {
    const auto& key = acked[acknowledged_seen_];
    ++report.acked;
    const auto found = times_.find(key);
    if (found == times_.end()) continue;
    found->second.acked_ns = now;
    if (options_.on_acknowledged) options_.on_acknowledged(key.first, key.second, found->second);
    times_.erase(found);
  }
}

void ScannerWatch::close_run(const std::string& run, RunState& state, ScannerWatchReport& report) {
  if (state.closed) return;
  state.closed = true;
  // END_OF_RUN says how many volumes the run has; the server refuses it while one below that count is missing.
  if (state.sent != state.highest + 1) {
    report.runs_left_open.push_back(
        fmt::format("{}: {} volumes sent of indices 0..{} (a volume never completed)", run, state.sent, state.highest));
    spdlog::warn("{} left open: {} volumes sent of indices 0..{}", run, state.sent, state.highest);
    return;
  }
  std::string error;
  if (sender_.finish_run(options_.session, run, state.sent, options_.finish_timeout_s, error)) {
    report.runs_closed.push_back(run);
    spdlog::info("{} closed: {} volumes", run, state.sent);
  } else {
    report.runs_left_open.push_back(fmt::format("{}: {}", run, error));
    spdlog::warn("{} could not be closed: {}", run, error);
  }
}

ScannerWatchReport ScannerWatch::run() {
  ScannerWatchReport report;
  while (!stop_.load()) {
    // While volumes await their ACKs, wait on the server's socket (a few ms at a time) rather than on the folder,
    // so that an ACK is taken as it arrives; otherwise wait on the folder.
    const bool awaiting = sender_.pending() > 0;
    const std::vector<std::filesystem::path> ready = watcher_.next_ready(awaiting ? 0.0 : 0.05);
    const int64_t ready_ns = stream::steady_now_ns();
    for (const auto& file : ready) {
      ++report.files;
      dicom::AddResult r = assembler_.add(file);
      const int64_t assembled_ns = stream::steady_now_ns();
      switch (r.status) {
        case dicom::AddResult::Status::kUsed:
          break;
        case dicom::AddResult::Status::kIncomplete:
          ++report.retries;
          spdlog::debug("not readable yet, offered again later: {}", r.reason);
          watcher_.retry_later(file);
          break;
        case dicom::AddResult::Status::kSkipped:
          note_skipped(report, r.reason);
          break;
        case dicom::AddResult::Status::kDuplicate:
          ++report.duplicates;
          spdlog::info("ignored: {}", r.reason);
          break;
      }
      for (auto& volume : r.volumes) {
        const std::string run = volume.run;
        const int64_t index = volume.index;
        const std::string first_file = volume.files.empty() ? file.string() : volume.files.front().string();
        try {
          send(std::move(volume), VolumeTimes{ready_ns, assembled_ns, 0, 0});
          ++report.volumes;
        } catch (const std::bad_alloc& e) {  // encoding a volume too large for the memory left
          note_skipped(report, fmt::format("{} volume {} (from {}): out of memory encoding it ({})", run, index,
                                           first_file, e.what()));
        } catch (const std::exception& e) {
          note_skipped(report, e.what());
        }
      }
    }
    sender_.poll_until_reply(sender_.pending() > 0 && ready.empty() ? 0.002 : 0.0);
    note_acknowledged(report);
    const double now = now_s();
    for (auto& [run, state] : runs_) {
      const bool full = options_.volumes_per_run > 0 && state.sent >= options_.volumes_per_run;
      const bool idle = options_.end_after_s > 0 && now - state.last_volume_s > options_.end_after_s;
      if (!state.closed && (full || idle)) {
        close_run(run, state, report);
        note_acknowledged(report);
      }
    }
    if (options_.stop_after > 0 && report.acked >= options_.stop_after) break;
  }
  sender_.drain(options_.finish_timeout_s);
  note_acknowledged(report);
  // Runs that have not ended by --volumes or --end-after stay open: a watch started again continues them.
  for (const auto& [run, state] : runs_) {
    if (!state.closed)
      report.runs_left_open.push_back(fmt::format("{}: {} volumes so far, still open", run, state.sent));
  }
  for (const auto& waiting : assembler_.waiting()) spdlog::warn("never completed: {}", waiting);
  report.failures = sender_.failures();
  report.stats = sender_.stats();
  return report;
}

}  // namespace rtf::scanner
