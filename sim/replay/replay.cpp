// Replay loop: pacing, fault plan, ACK log, END_OF_RUN.
#include "sim/replay/replay.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "stream/sender/volume_encoding.hpp"

namespace rtf::sim {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Appends newly acknowledged volumes to the ACK log as they arrive.
class AckLog {
 public:
  explicit AckLog(const std::filesystem::path& path) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), "we");
    if (file_ == nullptr) throw std::invalid_argument("cannot write the ACK log " + path.string());
  }
  ~AckLog() {
    if (file_ != nullptr) std::fclose(file_);
  }
  AckLog(const AckLog&) = delete;
  AckLog& operator=(const AckLog&) = delete;

  void update(const stream::VolumeSender& sender) {
    const auto& acks = sender.acknowledged();
    if (file_ == nullptr || written_ == acks.size()) return;
    for (; written_ < acks.size(); ++written_)
      fmt::print(file_, "{} {}\n", acks[written_].first, acks[written_].second);
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
  size_t written_ = 0;
};

}  // namespace

stream::VolumeHeader replay_header(const Image& image, const ReplayOptions& options, int64_t index, DataType type,
                                   double tr_s) {
  const ImageHeader& g = image.header();
  stream::VolumeHeader h;
  h.session = options.session;
  h.run = options.run;
  h.index = index;
  h.dims = g.dims;
  h.voxel_mm = g.voxel_mm;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) h.affine[r][c] = g.affine(r, c);
  }
  h.affine[3] = {0, 0, 0, 1};
  h.datatype = type;
  h.tr_s = tr_s;
  h.acquisition_time = static_cast<double>(index) * tr_s;  // seconds since the start of the run
  return h;
}

ReplayReport replay(const Image& image, const ReplayOptions& options, zmq::context_t& context) {
  if (!stream::valid_id(options.session)) throw std::invalid_argument("invalid session id '" + options.session + "'");
  if (!stream::valid_id(options.run)) throw std::invalid_argument("invalid run id '" + options.run + "'");
  const double tr_s = options.tr_s > 0 ? options.tr_s : image.header().tr_s;
  if (!(tr_s > 0)) throw std::invalid_argument("the image has no TR (pixdim[4]); give one with --tr");
  if (options.speed < 0) throw std::invalid_argument("speed must be >= 0");
  const int64_t nt = image.nt();
  if (options.start < 0 || options.start >= nt) {
    throw std::invalid_argument(fmt::format("start volume {} outside the image's 0..{}", options.start, nt - 1));
  }
  const int64_t count = options.count < 0 ? nt - options.start : std::min(options.count, nt - options.start);
  const DataType type = stream::replay_datatype(image);
  const double period = options.speed > 0 ? tr_s / options.speed : 0.0;
  spdlog::info("replaying {} volumes ({}x{}x{} {}, TR {} s) to {} every {:.3f} s", count, image.nx(), image.ny(),
               image.nz(), to_string(type), tr_s, options.address, period);

  stream::SenderOptions sender_options;
  sender_options.address = options.address;
  sender_options.resend_timeout_s = options.resend_timeout_s;
  sender_options.seed = options.faults.seed;
  stream::VolumeSender sender(context, sender_options);
  AckLog ack_log(options.ack_log);

  ReplayReport report;
  report.end_run_requested = options.end_run;
  const double t0 = now_s();
  double previous_target = t0;
  int64_t previous = -1;  // wire index of the volume sent last
  // Wire indices count from 0 at `start`: a run replayed from volume K is a run of its own.
  for (const PlannedSend& s : plan_faults(0, count, options.faults)) {
    const double target = std::max(t0 + static_cast<double>(s.index) * period, previous_target) + s.delay_s;
    previous_target = target;
    while (now_s() < target) {
      sender.poll(std::min(0.05, target - now_s()));
      ack_log.update(sender);
    }
    if (options.handled && previous >= 0) {
      const double deadline = now_s() + options.lockstep_timeout_s;
      while (!options.handled(previous)) {
        if (now_s() > deadline) {
          throw std::runtime_error(
              fmt::format("lockstep: the server did not finish volume {} within {} s (it sent no feedback line for it)",
                          previous, options.lockstep_timeout_s));
        }
        sender.poll(0.002);
        ack_log.update(sender);
      }
    }
    if (s.reconnect_before) {
      spdlog::info("fault: dropping the connection before volume {}", s.index);
      sender.reconnect();
    }
    stream::OutgoingVolume v;
    v.header = replay_header(image, options, s.index, type, tr_s);
    v.payload = stream::encode_voxels(image.volume(options.start + s.index), type);
    stream::seal_volume(v);
    sender.send(std::move(v), s.tamper);
    previous = s.index;
    ++report.volumes;
    sender.poll(0);
    ack_log.update(sender);
  }
  if (options.end_run) {
    std::string error;
    report.run_closed = sender.finish_run(options.session, options.run, count, options.finish_timeout_s, error);
    if (!report.run_closed) report.failures.push_back(error);
  } else {
    sender.drain(options.finish_timeout_s);
  }
  ack_log.update(sender);
  report.all_acknowledged = sender.pending() == 0 && sender.stats().failed == 0;
  for (const auto& f : sender.failures()) report.failures.insert(report.failures.begin(), f);
  report.stats = sender.stats();
  report.seconds = now_s() - t0;
  return report;
}

}  // namespace rtf::sim
