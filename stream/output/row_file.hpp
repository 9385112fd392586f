// RowFile: a file the live server appends one row to per volume (latency.jsonl, motion.tsv, feedback.tsv), every
// write checked and never in the live path's way. A row that cannot be written is lost (counted, reported to an
// OutputFailures, never retried or queued); a row cut short is cut back off the file, so a reader never sees half a
// row. A file that cannot be opened is tried again at the next row. The log is rate-limited per file: one error when
// writing starts failing (path, errno text), a count at 10, 100, 1000... lost rows, one line when it writes again,
// and the total at close. Not thread-safe (one writer). docs/live.md ("When a write fails").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "stream/output/output_failures.hpp"

namespace rtf::stream {

class RowFile {
 public:
  enum class Mode {
    kAppend,   // continue the file (a restarted server continues its motion.tsv)
    kTruncate  // start it empty
  };
  // Opens `path` (failures are reported and retried at the next row). `header` (with its '\n') is written first
  // whenever the file is empty when opened. `failures`: where lost rows are reported (null: nowhere).
  RowFile(std::filesystem::path path, Mode mode, std::string header = {},
          OutputFailures* failures = &output_failures());
  ~RowFile();  // close(); its error is logged
  RowFile(const RowFile&) = delete;
  RowFile& operator=(const RowFile&) = delete;

  // Appends `row` (ending in '\n') with one write; false when it was lost.
  bool append(std::string_view row);
  // Syncs (fdatasync) and closes the file, checked; returns the error ("" when none, or when already closed).
  std::string close();

  const std::filesystem::path& path() const { return path_; }
  int64_t written() const { return written_; }  // rows written
  int64_t lost() const { return lost_; }        // rows lost
  const std::string& first_error() const { return first_error_; }

 private:
  bool open();
  void lose(const std::string& error);

  std::filesystem::path path_;
  Mode mode_;
  OutputFailures* failures_;
  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;  // written before the next row: the header, or "\n" after a torn row that could not be cut back
  std::string header_;
  int64_t size_ = 0;  // bytes in the file after the last whole row
  int64_t written_ = 0, lost_ = 0;
  int64_t failing_since_ = -1;  // lost_ when the current run of failures began (-1: writing)
  std::string first_error_, open_error_;
};

}  // namespace rtf::stream
