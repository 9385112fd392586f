// run_batch: the subjects found, a job keyed by the command and its options (each subject's chunk also by its inputs'
// names, sizes and times), each chunk a child process whose exit status, log and files come back as bytes, written
// under DIR by rank 0 as they arrive.
#include "core/scale/batch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/io/atomic_file.hpp"
#include "core/io/output_set.hpp"
#include "core/scale/child_process.hpp"
#include "core/scale/chunk_files.hpp"
#include "core/scale/job_key.hpp"
#include "core/scale/scale_out.hpp"
#include "core/scale/subject_list.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be opened", path.string()));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read failed", path.string()));
  return text;
}

// Runs one subject's command into a private temporary folder and packs its exit status, log and files.
ChunkBytes run_subject(const BatchOptions& args, const BatchSubject& s, Device& device) {
  const fs::path work = fs::temp_directory_path() / fmt::format("rtfmri-batch-{}-{}", ::getpid(), s.id);
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<std::string> argv{this_executable(), "--device",
                                fmt::format("{}:{}", device.info().platform_index, device.info().device_index),
                                args.command, s.input};
  if (args.command == "glm" && !s.events.empty()) {
    argv.insert(argv.end(), {"--events", s.events});
  }
  argv.insert(argv.end(), {"--out", (work / s.id).string()});
  argv.insert(argv.end(), args.options.begin(), args.options.end());
  const Stopwatch clock;
  const int status = run_child_process(argv, work / "log.txt");
  const double seconds = clock.seconds();
  ChunkWriter w;
  w.value<int32_t>(status).value(seconds);
  const std::string log = read_text(work / "log.txt");
  w.values(std::vector<char>(log.begin(), log.end()));
  std::vector<fs::path> files;
  if (status == 0) {
    for (const auto& e : fs::recursive_directory_iterator(work)) {
      if (e.is_regular_file() && e.path().filename() != "log.txt") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  w.value<uint64_t>(files.size());
  for (const fs::path& f : files) {
    const std::string name = fs::relative(f, work).string(), bytes = read_text(f);
    w.values(std::vector<char>(name.begin(), name.end())).values(std::vector<char>(bytes.begin(), bytes.end()));
  }
  fs::remove_all(work);
  return w.take();
}

// A subject's result written under DIR (its log and files appear together); returns its entry of batch.json and
// whether it succeeded.
nlohmann::json write_subject(const BatchSubject& s, const ChunkBytes& bytes, const fs::path& out, bool& ok) {
  ChunkReader r(bytes);
  const auto status = r.value<int32_t>();
  const auto seconds = r.value<double>();
  const auto log = r.values<char>();
  const fs::path folder = out / s.folder;
  fs::create_directories(folder);
  io::OutputSet subject_files;
  write_text_atomically(subject_files.add(folder / (s.id + "_batch.log")), std::string_view(log.data(), log.size()));
  nlohmann::json entry{{"id", s.id}, {"input", s.input}, {"status", status}, {"seconds", seconds}};
  if (!s.events.empty()) entry["events"] = s.events;
  entry["files"] = nlohmann::json::array();
  const auto files = r.value<uint64_t>();
  for (uint64_t k = 0; k < files; ++k) {
    const auto name = r.values<char>();
    const auto content = r.values<char>();
    const std::string file(name.begin(), name.end());
    write_text_atomically(subject_files.add(folder / file), std::string_view(content.data(), content.size()));
    entry["files"].push_back((fs::path(s.folder) / file).string());
  }
  subject_files.commit();
  ok = status == 0;
  if (!ok) {
    const std::string text(log.begin(), log.end());
    spdlog::error("batch: {} failed (exit status {}): {}", s.id, status,
                  text.substr(text.size() > 600 ? text.size() - 600 : 0));
  }
  return entry;
}

std::vector<BatchSubject> batch_subjects(const BatchOptions& args) {
  if (args.list.empty() == args.bids.empty()) throw std::invalid_argument("give --list FILE or --bids ROOT");
  for (const std::string& o : args.options) {
    if (o == "--out" || o == "-o" || o == "--device" || o == "--devices") {
      throw std::invalid_argument(fmt::format("{} after '--': batch sets it for each subject", o));
    }
  }
  const std::string suffix = args.command == "glm" ? "bold" : "T1w";
  return args.list.empty() ? find_bids_subjects(args.bids, suffix) : read_subject_list(args.list, suffix);
}

}  // namespace

void run_batch(const BatchOptions& args, const DeviceChoice& devices) {
  const Stopwatch clock;
  const std::vector<BatchSubject> subjects = batch_subjects(args);
  const fs::path out(args.out);
  ScaleOut scale(devices);
  Workers& workers = scale.workers();
  ChunkJob job;
  job.name = fmt::format("batch {}", args.command);
  job.chunks = static_cast<int64_t>(subjects.size());
  // The key: the command and its options; each subject's chunk also by its id and inputs (name, size, modification
  // time), so that a changed or fixed input is run again alone.
  job.key = job_key(args.command, std::vector<std::string_view>(args.options.begin(), args.options.end()));
  job.chunk_key = [&](int64_t chunk) {
    const BatchSubject& s = subjects[static_cast<size_t>(chunk)];
    std::string k = s.id;
    for (const std::string& f : {s.input, s.events}) {
      if (!f.empty())
        k += fmt::format(" {} {} {}", f, fs::file_size(f), fs::last_write_time(f).time_since_epoch().count());
    }
    return job_key(k);
  };
  job.chunk_dir = out / ".chunks";
  job.keep_results = false;
  job.compute = [&](Device& device, int, int64_t chunk) {
    return run_subject(args, subjects[static_cast<size_t>(chunk)], device);
  };
  spdlog::info("batch {}: {} subject(s) -> {}", args.command, subjects.size(), out.string());
  nlohmann::json report{{"command", args.command},
                        {"options", args.options},
                        {"subjects", nlohmann::json::array()},
                        {"ranks", scale.ranks().size()},
                        {"devices", workers.total_devices()}};
  std::vector<int64_t> failed;
  job.on_result = [&](int64_t chunk, const ChunkBytes& bytes) {
    bool ok = true;
    report["subjects"].push_back(write_subject(subjects[static_cast<size_t>(chunk)], bytes, out, ok));
    if (!ok) failed.push_back(chunk);
  };
  ProgressLog progress("subjects", 5.0);
  scale.run(job, std::ref(progress));
  if (!scale.root()) return;
  // Failed subjects' chunk files go, so that the batch started again runs them again.
  for (int64_t c : failed) fs::remove(chunk_file_path(job.chunk_dir, c));
  std::sort(report["subjects"].begin(), report["subjects"].end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["id"] < b["id"]; });
  report["failed"] = failed.size();
  report["seconds"] = clock.seconds();
  write_text_atomically(out / "batch.json", report.dump(2) + "\n");
  if (!failed.empty()) {
    std::string names;
    for (int64_t c : failed) names += (names.empty() ? "" : ", ") + subjects[static_cast<size_t>(c)].id;
    throw std::runtime_error(
        fmt::format("{} of {} subject(s) failed: {} (their logs: {}/<folder>/<id>_batch.log; "
                    "run the batch again to retry them alone)",
                    failed.size(), subjects.size(), names, out.string()));
  }
  fs::remove_all(job.chunk_dir);
  fmt::print("batch {}: {} subject(s) -> {} ({:.1f} s)\n", args.command, subjects.size(), out.string(),
             clock.seconds());
}

}  // namespace rtf
