// FSL VEST reader and writer: the /Key header, /Matrix rows, plain matrices, and errors that name the file and line.
#include "core/permutation/vest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace rtf {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& path, int line, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: line {}: {}", path.string(), line, what));
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream s(line);
  std::string t;
  while (s >> t) out.push_back(t);
  return out;
}

enum class Parse { kOk, kNotNumber, kOutOfRange, kNonFinite };

// A decimal number as FSL writes or accepts it: "1", "-0.5", "1e-3", "+2". from_chars rejects a leading '+'.
Parse parse_number(std::string_view token, double& value) {
  if (token.size() > 1 && token[0] == '+' && token[1] != '+' && token[1] != '-') token.remove_prefix(1);
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec == std::errc::invalid_argument || ptr != end) return Parse::kNotNumber;
  if (ec == std::errc::result_out_of_range) return Parse::kOutOfRange;
  return std::isfinite(value) ? Parse::kOk : Parse::kNonFinite;
}

double number_or_fail(const fs::path& path, int line, const std::string& token, size_t column) {
  double value = 0.0;
  switch (parse_number(token, value)) {
    case Parse::kOk:
      return value;
    case Parse::kNotNumber:
      fail(path, line, fmt::format("value {}, '{}', is not a number", column, token));
    case Parse::kOutOfRange:
      fail(path, line, fmt::format("value {}, '{}', is out of the range of a double", column, token));
    case Parse::kNonFinite:
      break;
  }
  fail(path, line, fmt::format("value {}, '{}', is not finite", column, token));
}

// The single non-negative integer after a header key (/NumWaves 3).
int count_or_fail(const fs::path& path, int line, const std::vector<std::string>& tokens, int minimum) {
  const std::string& key = tokens[0];
  if (tokens.size() != 2) fail(path, line, fmt::format("{} needs exactly one integer after it", key));
  const std::string& text = tokens[1];
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < minimum) {
    fail(path, line, fmt::format("{} '{}' is not an integer of at least {}", key, text, minimum));
  }
  return value;
}

struct Declared {
  int value = 0;
  int line = 0;
  std::string key;
};

struct ContrastName {
  int k = 0;
  std::string text;
  int line = 0;
};

struct Parsed {
  VestMatrix m;
  std::vector<int> row_lines;  // 1-based line of each row
};

Parsed parse(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw std::runtime_error(fmt::format("{}: is a directory, not a file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the file for reading", path.string()));

  enum class State { kStart, kHeader, kRows } state = State::kStart;
  std::optional<Declared> waves;
  std::optional<Declared> points;  // /NumPoints or /NumContrasts
  std::vector<ContrastName> names;
  bool have_ppheights = false;
  int matrix_line = 0;
  Parsed out;
  std::vector<double> flat;  // row-major
  size_t width = 0;

  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // UTF-8 byte order mark
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const auto tokens = split(line);
    if (tokens.empty()) continue;
    if (state == State::kStart) state = tokens[0][0] == '/' ? State::kHeader : State::kRows;

    if (state == State::kHeader) {
      const std::string& key = tokens[0];
      if (key[0] != '/') {
        double v = 0.0;
        if (parse_number(key, v) != Parse::kNotNumber) {
          fail(path, line_no, "numbers before /Matrix: the VEST header must end with a /Matrix line");
        }
        fail(path, line_no, fmt::format("'{}' is not a /Key line, and no /Matrix line came before it", key));
      }
      if (key == "/Matrix") {
        if (tokens.size() > 1) fail(path, line_no, "unexpected text after /Matrix");
        state = State::kRows;
        matrix_line = line_no;
      } else if (key == "/NumWaves") {
        if (waves) fail(path, line_no, fmt::format("/NumWaves repeated (first on line {})", waves->line));
        waves = Declared{count_or_fail(path, line_no, tokens, 1), line_no, key};
      } else if (key == "/NumPoints" || key == "/NumContrasts") {
        const int n = count_or_fail(path, line_no, tokens, 0);
        if (points && (points->key == key || points->value != n)) {
          fail(path, line_no,
               fmt::format("{} {} repeats or disagrees with {} {} on line {}", key, n, points->key, points->value,
                           points->line));
        }
        points = Declared{n, line_no, key};
      } else if (key == "/PPheights") {
        if (have_ppheights) fail(path, line_no, "/PPheights repeated");
        have_ppheights = true;
        for (size_t i = 1; i < tokens.size(); ++i) {
          out.m.ppheights.push_back(number_or_fail(path, line_no, tokens[i], i));
        }
      } else if (key.starts_with("/ContrastName")) {
        const std::string_view digits = std::string_view(key).substr(std::string_view("/ContrastName").size());
        int k = 0;
        const auto [ptr, kec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
        if (digits.empty() || kec != std::errc() || ptr != digits.data() + digits.size() || k < 1) {
          fail(path, line_no, fmt::format("'{}' should be /ContrastName followed by a number from 1", key));
        }
        for (const ContrastName& seen : names) {
          if (seen.k == k) fail(path, line_no, fmt::format("{} repeated (first on line {})", key, seen.line));
        }
        size_t at = line.find(key) + key.size();
        while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
        names.push_back({k, line.substr(at), line_no});
      }
      // /RequiredEffect and any other /Key carry nothing randomise needs; FSL ignores them too.
      continue;
    }

    // A row of the matrix.
    if (out.row_lines.empty()) {
      width = waves ? static_cast<size_t>(waves->value) : tokens.size();
    }
    if (tokens.size() != width) {
      if (waves) {
        fail(path, line_no,
             fmt::format("the row has {} values but /NumWaves (line {}) says {}", tokens.size(), waves->line, width));
      }
      fail(path, line_no,
           fmt::format("the row has {} values but the first row (line {}) has {}", tokens.size(), out.row_lines.front(),
                       width));
    }
    if (points && out.row_lines.size() == static_cast<size_t>(points->value)) {
      fail(path, line_no,
           fmt::format("more rows than {} (line {}) says: {}", points->key, points->line, points->value));
    }
    for (size_t i = 0; i < tokens.size(); ++i) flat.push_back(number_or_fail(path, line_no, tokens[i], i + 1));
    out.row_lines.push_back(line_no);
  }
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error after line {}", path.string(), line_no));

  const int last = std::max(line_no, 1);
  if (state == State::kStart) fail(path, last, "the file is empty: no rows of numbers");
  if (state == State::kHeader) fail(path, last, "the file ends without a /Matrix line");
  if (out.row_lines.empty()) {
    fail(path, last,
         matrix_line > 0 ? fmt::format("no rows of numbers after /Matrix (line {})", matrix_line)
                         : std::string("no rows of numbers"));
  }
  const size_t rows = out.row_lines.size();
  if (points && rows < static_cast<size_t>(points->value)) {
    fail(path, out.row_lines.back(),
         fmt::format("the matrix ends after {} rows but {} (line {}) says {}", rows, points->key, points->line,
                     points->value));
  }

  out.m.values.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(width));
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < width; ++c) {
      out.m.values(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = flat[r * width + c];
    }
  }
  for (const ContrastName& name : names) {
    if (static_cast<size_t>(name.k) > rows) {
      fail(path, name.line, fmt::format("/ContrastName{} but the matrix has only {} rows", name.k, rows));
    }
    if (out.m.names.size() < static_cast<size_t>(name.k)) out.m.names.resize(static_cast<size_t>(name.k));
    out.m.names[static_cast<size_t>(name.k) - 1] = name.text;
  }
  return out;
}

}  // namespace

VestMatrix read_vest(const std::filesystem::path& path) {
  return parse(path).m;
}

std::vector<int> read_vest_groups(const std::filesystem::path& path) {
  const Parsed p = parse(path);
  const Eigen::MatrixXd& v = p.m.values;
  if (v.cols() != 1) {
    fail(path, p.row_lines.front(),
         fmt::format("a group file has one value per row, this row has {} (/NumWaves must be 1)", v.cols()));
  }
  std::vector<int> groups;
  groups.reserve(p.row_lines.size());
  for (Eigen::Index r = 0; r < v.rows(); ++r) {
    const double g = v(r, 0);
    if (g != std::round(g) || g < std::numeric_limits<int>::min() || g > std::numeric_limits<int>::max()) {
      fail(path, p.row_lines[static_cast<size_t>(r)], fmt::format("group '{}' is not an integer", g));
    }
    groups.push_back(static_cast<int>(g));
  }
  return groups;
}

void write_vest(const std::filesystem::path& path, const VestMatrix& m, bool contrasts) {
  const Eigen::MatrixXd& v = m.values;
  auto refuse = [&](std::string_view why) {
    throw std::runtime_error(fmt::format("{}: cannot write a VEST file: {}", path.string(), why));
  };
  if (v.rows() == 0 || v.cols() == 0) refuse("the matrix is empty");
  if (!v.allFinite()) refuse("the matrix has a non-finite value");
  for (const double h : m.ppheights) {
    if (!std::isfinite(h)) refuse("a /PPheights value is not finite");
  }
  for (const std::string& name : m.names) {
    if (name.find_first_of("\r\n") != std::string::npos) refuse("a contrast name contains a line break");
  }

  std::string text =
      fmt::format("/NumWaves\t{}\n{}\t{}\n", v.cols(), contrasts ? "/NumContrasts" : "/NumPoints", v.rows());
  for (size_t k = 0; k < m.names.size(); ++k) text += fmt::format("/ContrastName{}\t{}\n", k + 1, m.names[k]);
  if (!m.ppheights.empty()) {
    text += "/PPheights";
    for (const double h : m.ppheights) text += fmt::format("\t{:.6e}", h);
    text += '\n';
  }
  text += "\n/Matrix\n";
  for (Eigen::Index r = 0; r < v.rows(); ++r) {
    for (Eigen::Index c = 0; c < v.cols(); ++c) {
      if (c > 0) text += ' ';
      text += fmt::format("{:.6e}", v(r, c));
    }
    text += '\n';
  }

  // Written whole under a temporary name, then renamed, so a failed write never leaves a file that looks complete.
  fs::path partial = path;
  partial += ".part";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) refuse(fmt::format("cannot open {} for writing", partial.string()));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(partial, ignored);
      refuse("the write failed");
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    refuse(fmt::format("cannot rename {} into place: {}", partial.string(), ec.message()));
  }
}

}  // namespace rtf
