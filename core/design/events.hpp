// BIDS events.tsv: the experimental events (onset, duration, trial type, optional modulation) that a
// first-level design is built from. Tab-separated with a header row; columns are found by name and may
// come in any order; other columns are ignored. Malformed input throws EventsFormatError naming the file,
// line and column. See docs/algorithms/design.md.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

struct Event {
  double onset_s = 0.0;              // seconds from the first volume's acquisition start (may be negative)
  double duration_s = 0.0;           // seconds, >= 0; 0 models an impulse (an "event" in SPM's terms)
  std::string trial_type;            // condition name
  std::optional<double> modulation;  // the 'modulation' column's value, when present and not n/a
};

struct EventsTable {
  std::vector<Event> events;           // in file order
  bool has_trial_type_column = false;  // false: every event got kDefaultTrialType
  bool has_modulation_column = false;
  size_t skipped_rows = 0;  // rows whose trial_type was n/a (not modelled)
};

// Trial type given to every event of a file without a trial_type column.
inline constexpr std::string_view kDefaultTrialType = "event";

// Malformed events input. what() reads "FILE:LINE: column C (NAME): problem" (column parts omitted when
// the problem is the whole line or file). Lines and columns count from 1; 0 means "not applicable".
class EventsFormatError : public std::invalid_argument {
 public:
  EventsFormatError(std::string file, size_t line, size_t column, std::string column_name, const std::string& problem);
  const std::string& file() const { return file_; }
  size_t line() const { return line_; }
  size_t column() const { return column_; }
  const std::string& column_name() const { return column_name_; }

 private:
  std::string file_;
  size_t line_;
  size_t column_;
  std::string column_name_;
};

// Parses events.tsv text. Rules (BIDS 1.x, with tolerance for common editing artefacts):
// - the first non-blank, non-comment line is the header; 'onset' and 'duration' are required columns,
//   'trial_type' and 'modulation' optional; duplicate or empty column names are errors;
// - lines starting with '#' and blank lines are skipped; CRLF and a UTF-8 byte-order mark are accepted;
//   spaces around a field are ignored; every row must have as many fields as the header;
// - onset: a finite number (n/a is an error); duration: a finite number >= 0, n/a read as 0 (an impulse);
//   trial_type: n/a skips the row (counted in skipped_rows); modulation: a finite number or n/a;
// - numbers use '.' as the decimal point (C locale), optional exponent; nothing may follow them.
// `source` names the input in errors. Throws EventsFormatError.
EventsTable parse_events_tsv(std::string_view text, std::string_view source = "events.tsv");

// Reads and parses a file (at most 64 MiB). Throws EventsFormatError, also when it cannot be read.
EventsTable read_events_tsv(const std::filesystem::path& path);

// The distinct trial types, sorted (byte order), as the design's default condition order.
std::vector<std::string> trial_types(const std::vector<Event>& events);

}  // namespace rtf
