// BIDS events.tsv parsing: header lookup by name, strict numbers, n/a handling, errors with file/line/column.
#include "core/design/events.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace rtf {
namespace {

constexpr std::string_view kNa = "n/a";
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr std::uintmax_t kMaxEventsFileBytes = std::uintmax_t{64} << 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(trim(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return fields;
}

// A field as it can be shown in a message: non-printable bytes escaped, long fields cut.
std::string printable(std::string_view s) {
  std::string out;
  for (const char ch : s.substr(0, 40)) {
    const auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7f) ? std::string(1, ch) : fmt::format("\\x{:02x}", c);
  }
  if (s.size() > 40) out += "...";
  return out;
}

std::optional<double> parse_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return std::nullopt;
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

struct Columns {
  size_t count = 0;
  std::vector<std::string> names;
  size_t onset = 0, duration = 0;
  std::optional<size_t> trial_type, modulation;
};

}  // namespace

EventsFormatError::EventsFormatError(std::string file, size_t line, size_t column, std::string column_name,
                                     const std::string& problem)
    : std::invalid_argument(line == 0     ? fmt::format("{}: {}", file, problem)
                            : column == 0 ? fmt::format("{}:{}: {}", file, line, problem)
                                          : fmt::format("{}:{}: column {} ({}): {}", file, line, column,
                                                        printable(column_name), problem)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      column_name_(std::move(column_name)) {}

EventsTable parse_events_tsv(std::string_view text, std::string_view source) {
  const std::string file(source);
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());

  EventsTable table;
  std::optional<Columns> columns;
  size_t line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t newline = text.find('\n', start);
    const std::string_view raw =
        text.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start);
    start = newline == std::string_view::npos ? text.size() + 1 : newline + 1;
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // only separators
    const auto fields = split_tabs(raw);

    if (!columns) {  // the header
      Columns c;
      c.count = fields.size();
      std::set<std::string_view> seen;
      std::optional<size_t> onset, duration;
      for (size_t i = 0; i < fields.size(); ++i) {
        const std::string_view name = fields[i];
        if (name.empty()) throw EventsFormatError(file, line_number, i + 1, "", "empty column name in the header");
        if (!seen.insert(name).second) {
          throw EventsFormatError(file, line_number, i + 1, std::string(name), "duplicate column name");
        }
        c.names.emplace_back(name);
        if (name == "onset") onset = i;
        if (name == "duration") duration = i;
        if (name == "trial_type") c.trial_type = i;
        if (name == "modulation") c.modulation = i;
      }
      if (!onset || !duration) {
        throw EventsFormatError(
            file, line_number, 0, "",
            fmt::format("the header has no '{}' column (BIDS requires onset and duration; found: {})",
                        !onset ? "onset" : "duration", printable(fmt::format("{}", fmt::join(c.names, ", ")))));
      }
      c.onset = *onset;
      c.duration = *duration;
      table.has_trial_type_column = c.trial_type.has_value();
      table.has_modulation_column = c.modulation.has_value();
      columns = std::move(c);
      continue;
    }

    const Columns& c = *columns;
    if (fields.size() < c.count) {
      throw EventsFormatError(
          file, line_number, 0, "",
          fmt::format("{} fields, the header has {} (fields are separated by tabs)", fields.size(), c.count));
    }
    for (size_t i = c.count; i < fields.size(); ++i) {
      if (!fields[i].empty()) {
        throw EventsFormatError(file, line_number, i + 1, "(none)",
                                fmt::format("more fields than the header's {} columns", c.count));
      }
    }
    const auto number = [&](size_t column, bool allow_na) -> std::optional<double> {
      const std::string_view f = fields[column];
      if (f == kNa) {
        if (allow_na) return std::nullopt;
        throw EventsFormatError(file, line_number, column + 1, c.names[column], "n/a is not allowed here");
      }
      const auto v = parse_number(f);
      if (!v) {
        throw EventsFormatError(file, line_number, column + 1, c.names[column],
                                fmt::format("'{}' is not a finite number", printable(f)));
      }
      return v;
    };

    Event e;
    e.onset_s = *number(c.onset, false);
    e.duration_s = number(c.duration, true).value_or(0.0);
    if (e.duration_s < 0.0) {
      throw EventsFormatError(file, line_number, c.duration + 1, "duration",
                              fmt::format("negative duration {}", e.duration_s));
    }
    if (c.modulation) e.modulation = number(*c.modulation, true);
    if (c.trial_type) {
      const std::string_view t = fields[*c.trial_type];
      if (t == kNa) {
        ++table.skipped_rows;
        continue;
      }
      if (t.empty()) throw EventsFormatError(file, line_number, *c.trial_type + 1, "trial_type", "empty trial type");
      e.trial_type = std::string(t);
    } else {
      e.trial_type = std::string(kDefaultTrialType);
    }
    table.events.push_back(std::move(e));
  }
  if (!columns) throw EventsFormatError(file, 0, 0, "", "no header row (the file is empty or only comments)");
  return table;
}

EventsTable read_events_tsv(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw EventsFormatError(file, 0, 0, "", fmt::format("cannot read: {}", ec.message()));
  if (size > kMaxEventsFileBytes) {
    throw EventsFormatError(file, 0, 0, "", fmt::format("{} bytes is more than an events file should be", size));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EventsFormatError(file, 0, 0, "", "cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw EventsFormatError(file, 0, 0, "", "read error");
  return parse_events_tsv(text.str(), file);
}

std::vector<std::string> trial_types(const std::vector<Event>& events) {
  std::set<std::string> names;
  for (const Event& e : events) names.insert(e.trial_type);
  return {names.begin(), names.end()};
}

}  // namespace rtf
