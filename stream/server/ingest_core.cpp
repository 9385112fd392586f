// IngestCore: validation, session binding, recording before ACK, duplicates, end of run, hand-off to later stages.
#include "stream/server/ingest_core.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <string_view>
#include <variant>

#include "stream/recording/journal.hpp"
#include "stream/recording/recovery.hpp"

namespace rtf::stream {

namespace {

std::string_view as_text(std::span<const std::byte> frame) {
  return {reinterpret_cast<const char*>(frame.data()), frame.size()};
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string list_indices(const std::vector<int64_t>& indices, size_t max_listed = 20) {
  std::string out;
  for (size_t i = 0; i < indices.size() && i < max_listed; ++i) out += (i ? ", " : "") + std::to_string(indices[i]);
  if (indices.size() > max_listed) out += fmt::format(" and {} more", indices.size() - max_listed);
  return out;
}

ErrorCode code_for(RejectKind kind) {
  switch (kind) {
    case RejectKind::kInconsistent:
      return ErrorCode::kInconsistentRun;
    case RejectKind::kRunEnded:
      return ErrorCode::kRunClosed;
    case RejectKind::kInvalid:
      return ErrorCode::kInvalidField;
    case RejectKind::kWriteFailed:
    case RejectKind::kResource:  // out of descriptors or memory: the server's trouble, retryable
    case RejectKind::kNone:
      break;
  }
  return ErrorCode::kInternal;
}

}  // namespace

IngestCore::IngestCore(const std::filesystem::path& session_dir, IngestOptions options)
    : options_(std::move(options)),
      recorder_(session_dir, options_.recorder),
      queue_(options_.queue_capacity, [](const AcceptedVolume& v) -> std::string_view { return v.header.run; }),
      nack_log_("NACKs", options_.log_limit, options_.recorder.clock),
      run_log_("new-run lines", options_.log_limit, options_.recorder.clock) {}

IngestCore::~IngestCore() {
  queue_.close();
  for (auto& f : run_files_) f.wait();
}

Reply IngestCore::nack(ReplyTo of, const std::string& session, const std::string& run, std::optional<int64_t> index,
                       ErrorCode code, std::string reason) {
  ++stats_.nacked;
  ++stats_.nacks_by_code[std::string(to_string(code))];
  const char* what = of == ReplyTo::kEndOfRun ? "end_of_run" : (of == ReplyTo::kVolume ? "volume" : "message");
  const std::string where = session.empty() && run.empty() ? std::string() : fmt::format(" {}/{}", session, run);
  nack_log_.warn(to_string(code), "NACK {}{}{}: {} ({})", what, where, index ? fmt::format(" #{}", *index) : "", reason,
                 to_string(code));
  return Nack{of, session, run, index, code, std::move(reason)};
}

Reply IngestCore::nack(const VolumeHeader& h, ErrorCode code, std::string reason) {
  return nack(ReplyTo::kVolume, h.session, h.run, h.index, code, std::move(reason));
}

std::string IngestCore::handle_frames(std::span<const std::span<const std::byte>> frames, int64_t received_ns) {
  auto reply_text = [](const Reply& r) { return std::visit([](const auto& m) { return serialize(m); }, r); };
  if (frames.empty()) {
    std::lock_guard lock(mutex_);
    ++stats_.messages;
    return reply_text(nack(ReplyTo::kUnknown, "", "", std::nullopt, ErrorCode::kBadFrames, "empty message"));
  }
  const std::string_view text = as_text(frames[0]);
  Parsed<SenderMessage> parsed = parse_sender_header(text, options_.limits);
  if (!parsed.ok()) {
    std::lock_guard lock(mutex_);
    ++stats_.messages;
    Nack n = make_nack(text, parsed.error, options_.limits.max_header_bytes);
    return reply_text(nack(n.of, n.session, n.run, n.index, n.code, n.reason));
  }
  if (auto* header = std::get_if<VolumeHeader>(&*parsed.value)) {
    if (frames.size() != 2) {
      std::lock_guard lock(mutex_);
      ++stats_.messages;
      return reply_text(nack(*header, ErrorCode::kBadFrames,
                             fmt::format("a volume is 2 frames (header, payload); got {}", frames.size())));
    }
    std::vector<std::byte> payload(frames[1].begin(), frames[1].end());
    return reply_text(handle_volume(*header, std::move(payload), received_ns));
  }
  const auto& end = std::get<EndOfRun>(*parsed.value);
  if (frames.size() != 1) {
    std::lock_guard lock(mutex_);
    ++stats_.messages;
    return reply_text(nack(ReplyTo::kEndOfRun, end.session, end.run, std::nullopt, ErrorCode::kBadFrames,
                           fmt::format("end_of_run is 1 frame; got {}", frames.size())));
  }
  return reply_text(handle_end_of_run(end));
}

void RecordedStamp::set(int64_t recorded_ns) {
  ns_.store(recorded_ns);
  ns_.notify_all();
}

int64_t RecordedStamp::wait() const {
  int64_t v = ns_.load();
  while (v == 0) {
    ns_.wait(0);
    v = ns_.load();
  }
  return v;
}

int64_t RecordedStamp::recorded_ns() const {
  const int64_t t = wait();
  return t > 0 ? t : 0;
}

IngestLatency ingest_latency(const AcceptedVolume& v) {
  IngestLatency l;
  l.run = v.header.run;
  l.index = v.header.index;
  l.received_ns = v.received_ns;
  l.written_ns = v.written_ns;
  if (v.recorded) l.recorded_ns = v.recorded->recorded_ns();
  return l;
}

Reply IngestCore::handle_volume(const VolumeHeader& h, std::vector<std::byte>&& payload, int64_t received_ns) {
  std::lock_guard lock(mutex_);
  ++stats_.messages;
  if (ProtocolError e = check_payload(h, payload); !e.ok()) return nack(h, e.code, e.reason);
  if (h.index < 0 || h.index >= options_.limits.max_volumes) {
    return nack(h, ErrorCode::kIndexOutOfRange,
                fmt::format("index {} outside [0, {})", h.index, options_.limits.max_volumes));
  }
  if (std::string why; !recorder_.bind_session(h.session, why)) return nack(h, ErrorCode::kWrongSession, why);
  if (auto first = first_of_run_.find(h.run); first != first_of_run_.end()) {
    if (std::string why; !consistent_within_run(first->second, h, &why)) {
      return nack(h, ErrorCode::kInconsistentRun, why);
    }
  }

  RecordedVolume volume;
  volume.run = h.run;
  volume.index = h.index;
  volume.grid = to_image_header(h);
  volume.payload = payload;
  volume.received_s = unix_now_s();
  volume.crc32 = h.checksum;  // check_payload verified it
  const RecordResult written = recorder_.begin_record(volume);
  switch (written.status) {
    case RecordStatus::kDuplicate:
      ++stats_.duplicates;
      duplicates_.fetch_add(1, std::memory_order_relaxed);
      return Ack{ReplyTo::kVolume, h.session, h.run, h.index, true};
    case RecordStatus::kRejected:
      return nack(h, code_for(written.kind), written.reason);
    case RecordStatus::kRecorded:
      break;
  }
  // Written: hand it on now, so that analysis runs while the recorder makes it durable; ACK only after that.
  auto stamp = std::make_shared<RecordedStamp>();
  queue_.push(AcceptedVolume{h, std::move(payload), received_ns, steady_now_ns(), stamp});  // never waits
  const RecordResult result = recorder_.commit_record();
  if (result.status != RecordStatus::kRecorded) {
    stamp->set(-1);
    return nack(h, code_for(result.kind), result.reason);
  }
  stamp->set(steady_now_ns());
  ++stats_.recorded;
  if (first_of_run_.emplace(h.run, h).second) {
    run_log_.log(spdlog::level::info, "first volume", "run {}/{}: first volume #{} ({}x{}x{} {}, TR {} s)", h.session,
                 h.run, h.index, h.dims[0], h.dims[1], h.dims[2], datatype_to_wire(h.datatype), h.tr_s);
  }
  ++open_run_volumes_[h.run];
  return Ack{ReplyTo::kVolume, h.session, h.run, h.index, false};
}

Reply IngestCore::handle_end_of_run(const EndOfRun& m) {
  std::lock_guard lock(mutex_);
  ++stats_.messages;
  auto fail = [&](ErrorCode code, std::string reason) {
    return nack(ReplyTo::kEndOfRun, m.session, m.run, std::nullopt, code, std::move(reason));
  };
  if (std::string why; !recorder_.bind_session(m.session, why)) return fail(ErrorCode::kWrongSession, why);
  std::string open_error;
  const auto state = recorder_.run_state(m.run, m.num_volumes, &open_error);
  if (!state) return fail(ErrorCode::kInternal, fmt::format("run {} cannot be opened: {}", m.run, open_error));
  if (state->ended) {
    if (state->missing.empty() && state->recorded == m.num_volumes) {
      return Ack{ReplyTo::kEndOfRun, m.session, m.run, std::nullopt, false};
    }
    return fail(ErrorCode::kRunClosed, fmt::format("run {} already ended with {} volumes; this end_of_run says {}",
                                                   m.run, state->recorded, m.num_volumes));
  }
  if (!state->missing.empty()) {
    return fail(ErrorCode::kIncompleteRun,
                fmt::format("run {}: {} of {} volumes missing: {}", m.run, state->missing.size(), m.num_volumes,
                            list_indices(state->missing)));
  }
  if (state->recorded > m.num_volumes) {
    return fail(ErrorCode::kInvalidField,
                fmt::format("field 'num_volumes': run {} already has {} volumes, some with index >= {}", m.run,
                            state->recorded, m.num_volumes));
  }
  if (std::string error = recorder_.end_run(m.run); !error.empty()) {
    return fail(ErrorCode::kInternal, "closing the run: " + error);
  }
  ++stats_.runs_closed;
  {
    std::lock_guard ended(ended_mutex_);
    ended_runs_.insert(m.run);
  }
  open_run_volumes_.erase(m.run);
  first_of_run_.erase(m.run);
  run_log_.log(spdlog::level::info, "run closed", "run {}/{} closed with {} volumes; writing its NIfTI", m.session,
               m.run, m.num_volumes);
  // The journal is the record; the NIfTI is derived from it and can take seconds for a long run, so it is written
  // off the ingest thread (the next run's volumes are not kept waiting), one run at a time.
  run_files_.push_back(run_file_writer_.submit([this, run_dir = recorder_.run_dir(m.run), run = m.run] {
    try {
      const RunRecovery r = build_run_nifti(run_dir, read_journal(run_dir / "journal.jsonl"));
      const std::string line = r.error.empty()
                                   ? fmt::format("run {}: {} volumes -> {}", run, r.recovered, r.nifti.string())
                                   : fmt::format("run {}: writing the NIfTI failed: {}", run, r.error);
      run_log_.log(r.error.empty() ? spdlog::level::info : spdlog::level::err,
                   r.error.empty() ? "nifti" : "nifti failed", "{}", line);
      return line;
    } catch (const std::exception& e) {
      run_log_.error("nifti failed", "run {}: writing the NIfTI failed: {}", run, e.what());
      return fmt::format("run {}: writing the NIfTI failed: {}", run, e.what());
    }
  }));
  return Ack{ReplyTo::kEndOfRun, m.session, m.run, std::nullopt, false};
}

bool IngestCore::bind_session(const std::string& id, std::string& reason) {
  std::lock_guard lock(mutex_);
  if (!valid_id(id)) {
    reason = "invalid session id '" + id + "': 1-64 characters of [A-Za-z0-9._-], not starting with '.'";
    return false;
  }
  return recorder_.bind_session(id, reason);
}

void IngestCore::tick() {
  std::lock_guard lock(mutex_);
  recorder_.close_idle_runs();
  nack_log_.poll();
  run_log_.poll();
}

VolumeHandler IngestCore::as_handler() {
  return [this](const VolumeHeader& header, std::vector<std::byte>&& payload, int64_t received_ns) {
    return handle_volume(header, std::move(payload), received_ns);
  };
}

std::vector<std::string> IngestCore::wait_for_run_files() {
  std::vector<std::future<std::string>> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(run_files_);
  }
  std::vector<std::string> lines;
  for (auto& f : pending) lines.push_back(f.get());
  return lines;
}

std::vector<std::string> IngestCore::write_open_runs() {
  std::vector<std::string> lines = wait_for_run_files();
  std::lock_guard lock(mutex_);
  for (const auto& [run, count] : open_run_volumes_) {
    const std::filesystem::path run_dir = recorder_.dir() / "runs" / run;
    try {
      const RunRecovery r = build_run_nifti(run_dir, read_journal(run_dir / "journal.jsonl"));
      lines.push_back(r.error.empty()
                          ? fmt::format("run {} (not ended): {} volumes -> {}{}", run, r.recovered, r.nifti.string(),
                                        r.missing.empty() ? "" : ", missing " + list_indices(r.missing))
                          : fmt::format("run {} (not ended): {}", run, r.error));
    } catch (const std::exception& e) {
      lines.push_back(fmt::format("run {} (not ended): {}", run, e.what()));
    }
  }
  return lines;
}

IngestStats IngestCore::stats() const {
  std::lock_guard lock(mutex_);
  IngestStats s = stats_;
  s.queue_dropped = queue_.dropped();
  return s;
}

bool IngestCore::run_ended(const std::string& run) const {
  std::lock_guard lock(ended_mutex_);
  return ended_runs_.count(run) != 0;
}

IngestStats IngestCore::quick_stats() const {
  IngestStats s;
  s.duplicates = duplicates_.load(std::memory_order_relaxed);
  s.queue_dropped = queue_.dropped();
  return s;
}

}  // namespace rtf::stream
