// Verifying journaled payloads against volumes.bin and writing the run's 4D NIfTI; session-wide recovery.
#include "stream/recording/recovery.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "stream/output/output_failures.hpp"

namespace rtf::stream {

namespace {

// Reads `length` bytes at `offset`; false if the file is shorter.
bool read_range(std::ifstream& in, uint64_t offset, uint64_t length, std::vector<std::byte>& out) {
  out.resize(length);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(length));
  return in.gcount() == static_cast<std::streamsize>(length);
}

}  // namespace

bool RecoveryReport::complete() const {
  return error.empty() && std::all_of(runs.begin(), runs.end(), [](const RunRecovery& r) { return r.complete(); });
}

RunRecovery build_run_nifti(const std::filesystem::path& run_dir, const JournalContents& journal) {
  RunRecovery result;
  result.run = run_dir.filename().string();
  result.torn_tail = journal.torn_tail;
  result.ended = journal.ended;
  result.bad_lines = journal.bad_lines;

  std::map<int64_t, const JournalEntry*> distinct;
  for (const JournalEntry& e : journal.entries) distinct.emplace(e.index, &e);
  result.journaled = static_cast<int64_t>(distinct.size());
  if (journal.entries.empty()) return result;

  const std::filesystem::path bin_path = run_dir / "volumes.bin";
  std::ifstream in(bin_path, std::ios::binary);
  if (!in) {
    result.error = fmt::format("cannot open {}: {}", bin_path.string(), std::strerror(errno));
    return result;
  }
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());

  // Verify in file order; the first valid entry of an index wins, and fixes the run's grid.
  std::map<int64_t, const JournalEntry*> valid;
  std::map<int64_t, std::string> invalid;
  const ImageHeader* grid = nullptr;
  std::vector<std::byte> payload;
  for (const JournalEntry& e : journal.entries) {
    if (valid.count(e.index) != 0) continue;
    std::string reason;
    const uint64_t expected = static_cast<uint64_t>(e.grid.voxels_per_volume()) * bytes_per_voxel(e.grid.source_type);
    if (e.index < 0) {
      reason = "negative index";
    } else if (e.length != expected) {
      reason = fmt::format("length {} does not match the grid ({} bytes)", e.length, expected);
    } else if (e.offset > file_size || e.length > file_size - e.offset) {
      reason = fmt::format("payload range [{}, {}) beyond the end of volumes.bin ({} bytes)", e.offset,
                           e.offset + e.length, file_size);
    } else if (grid != nullptr && !grid_mismatch(*grid, e.grid).empty()) {
      reason = grid_mismatch(*grid, e.grid);
    } else if (!read_range(in, e.offset, e.length, payload)) {
      reason = "payload could not be read";
    } else if (crc32(payload) != e.crc32) {
      reason = fmt::format("crc32 mismatch (journal {:08x}, volumes.bin {:08x})", e.crc32, crc32(payload));
    }
    if (reason.empty()) {
      valid.emplace(e.index, &e);
      invalid.erase(e.index);
      if (grid == nullptr) grid = &e.grid;
    } else {
      invalid.emplace(e.index, reason);
    }
  }
  for (const auto& [index, reason] : invalid) result.corrupt.push_back({index, reason});
  if (valid.empty()) return result;

  ImageHeader header = *grid;
  header.num_volumes = static_cast<int64_t>(valid.size());
  header.description = "rtfmri run " + result.run;
  Image image(header);
  int64_t t = 0;
  for (const auto& [index, entry] : valid) {
    if (!read_range(in, entry->offset, entry->length, payload)) {
      result.error = fmt::format("volumes.bin changed while reading volume {}", index);
      return result;
    }
    decode_payload(header.source_type, payload, image.volume(t++));
    result.indices.push_back(index);
  }
  for (int64_t i = 0, k = 0; i <= result.indices.back(); ++i) {
    if (result.indices[static_cast<size_t>(k)] == i) {
      ++k;
    } else {
      result.missing.push_back(i);
    }
  }
  const std::filesystem::path out = run_dir / "bold.nii.gz";
  try {
    write_nifti(out, image, header.source_type);
  } catch (const std::exception& e) {
    result.error = fmt::format("writing {}: {}", out.string(), e.what());
    output_failures().file_lost(out, result.error);  // the live server's summary and exit status
    return result;
  }
  result.recovered = static_cast<int64_t>(valid.size());
  result.nifti = out;
  return result;
}

RecoveryReport recover_session(const std::filesystem::path& session_dir) {
  RecoveryReport report;
  const std::filesystem::path runs_dir = session_dir / "runs";
  std::error_code ec;
  if (!std::filesystem::is_directory(runs_dir, ec)) {
    report.error = fmt::format("{} is not a session directory (no runs/ folder)", session_dir.string());
    return report;
  }
  std::vector<std::filesystem::path> run_dirs;
  for (const auto& item : std::filesystem::directory_iterator(runs_dir, ec)) {
    if (item.is_directory()) run_dirs.push_back(item.path());
  }
  if (ec) {
    report.error = fmt::format("cannot list {}: {}", runs_dir.string(), ec.message());
    return report;
  }
  std::sort(run_dirs.begin(), run_dirs.end());
  for (const auto& dir : run_dirs) {
    try {
      report.runs.push_back(build_run_nifti(dir, read_journal(dir / "journal.jsonl")));
    } catch (const std::exception& e) {
      RunRecovery failed;
      failed.run = dir.filename().string();
      failed.error = e.what();
      report.runs.push_back(std::move(failed));
    }
  }
  return report;
}

}  // namespace rtf::stream
