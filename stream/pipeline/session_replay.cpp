// replay_session: journal entries in index order, payloads read and verified, each volume through LiveStage.
#include "stream/pipeline/session_replay.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>

#include "core/registration/subject_space.hpp"
#include "stream/protocol/checksum.hpp"
#include "stream/recording/journal.hpp"

namespace rtf::stream {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<ReplayedRun> replay_session(Device& device, const PipelineConfig& config,
                                        const std::filesystem::path& session_dir, const std::filesystem::path& out_dir,
                                        LiveOutputs* outputs, const std::vector<std::string>& runs,
                                        std::function<void(const TrResult&)> observer) {
  const std::filesystem::path runs_dir = session_dir / "runs";
  std::vector<std::string> names = runs;
  if (names.empty()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(runs_dir, ec)) {
      if (e.is_directory() && std::filesystem::exists(e.path() / "journal.jsonl")) names.push_back(e.path().filename());
    }
    std::sort(names.begin(), names.end());
  }
  if (names.empty())
    throw std::invalid_argument(fmt::format("{}: no recorded runs (runs/*/journal.jsonl)", session_dir.string()));
  PipelineConfig c = config;
  c.session_dir = out_dir.string();
  if (!c.t1.empty() && c.normalization.empty()) {
    // The live session normalised the T1 already: take its result instead of computing it again.
    const std::string prefix = (session_dir / "subject_space" / "t1_to_template").string();
    std::error_code ec;
    if (std::filesystem::exists(normalization_affine_path(prefix), ec)) {
      spdlog::info("replay: the T1 -> template normalisation of the recorded session: {}", prefix);
      c.normalization = prefix;
    }
  }
  std::filesystem::create_directories(out_dir);
  DropOldestQueue<AcceptedVolume> unused(1);
  LatencyLog latency(out_dir / "latency.jsonl");
  LiveStage stage(device, c, unused, latency, out_dir, outputs, std::move(observer));
  stage.set_wait_for_rois(true);  // every volume from the reference on is analysed with the subject-space ROIs
  std::vector<ReplayedRun> out;
  for (const std::string& run : names) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::filesystem::path dir = runs_dir / run;
    const JournalContents journal = read_journal(dir / "journal.jsonl");
    std::map<int64_t, JournalEntry> by_index;  // the first entry of an index wins, as in recovery
    for (const JournalEntry& e : journal.entries) by_index.emplace(e.index, e);
    std::ifstream payloads(dir / "volumes.bin", std::ios::binary);
    if (!payloads) throw std::invalid_argument(fmt::format("{}: cannot read volumes.bin", dir.string()));
    ReplayedRun r{run};
    std::vector<std::byte> bytes;
    for (const auto& [index, e] : by_index) {
      bytes.resize(e.length);
      payloads.seekg(static_cast<std::streamoff>(e.offset));
      payloads.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(e.length));
      if (!payloads || crc32(bytes) != e.crc32) {
        ++r.corrupt;
        payloads.clear();
        spdlog::warn("replay: run {} volume {}: payload unreadable or CRC mismatch, left out", run, index);
        continue;
      }
      LiveVolume v;
      v.run = run;
      v.index = index;
      v.grid = e.grid;
      v.type = e.grid.source_type;
      v.payload = bytes;
      v.received_ns = v.written_ns = now_ns();
      stage.handle(v, true);
      ++r.volumes;
    }
    stage.finish_run();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(r);
  }
  return out;
}

}  // namespace rtf::stream
