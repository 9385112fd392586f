// Confound table parsing: header detection, n/a, column selection, clear errors.
#include "core/design/confounds.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rtf {

namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream s(line);
  std::string t;
  while (s >> t) out.push_back(t);
  return out;
}

bool number(const std::string& token, double& value) {
  if (token == "n/a" || token == "NA" || token == "nan") {
    value = 0.0;
    return true;
  }
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  return ec == std::errc() && ptr == end && std::isfinite(value);
}

}  // namespace

ConfoundTable parse_confounds(std::string_view text, std::string_view source, const std::vector<std::string>& columns) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto fields = tokens(line);
    if (fields.empty() || fields[0][0] == '#') continue;
    std::vector<double> row(fields.size());
    bool numeric = true;
    for (size_t i = 0; i < fields.size(); ++i) numeric = numeric && number(fields[i], row[i]);
    if (!numeric && header.empty() && rows.empty()) {
      header = fields;
      continue;
    }
    if (!numeric) {
      for (size_t i = 0; i < fields.size(); ++i) {
        double v = 0.0;
        if (!number(fields[i], v)) {
          throw std::invalid_argument(
              fmt::format("{}: line {}, column {}: '{}' is not a number", source, line_no, i + 1, fields[i]));
        }
      }
    }
    const size_t width = header.empty() ? (rows.empty() ? fields.size() : rows[0].size()) : header.size();
    if (fields.size() != width) {
      throw std::invalid_argument(
          fmt::format("{}: line {} has {} values, expected {}", source, line_no, fields.size(), width));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw std::invalid_argument(fmt::format("{}: no rows of numbers", source));
  const size_t width = rows[0].size();
  if (header.empty()) {
    for (size_t i = 0; i < width; ++i) header.push_back(fmt::format("confound_{}", i + 1));
  }
  std::vector<size_t> picked;
  if (columns.empty()) {
    for (size_t i = 0; i < width; ++i) picked.push_back(i);
  } else {
    for (const std::string& name : columns) {
      size_t i = 0;
      while (i < header.size() && header[i] != name) ++i;
      if (i == header.size()) throw std::invalid_argument(fmt::format("{}: no column named '{}'", source, name));
      picked.push_back(i);
    }
  }
  ConfoundTable t;
  t.values = Eigen::MatrixXd(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(picked.size()));
  for (size_t k = 0; k < picked.size(); ++k) {
    t.names.push_back(header[picked[k]]);
    for (size_t r = 0; r < rows.size(); ++r) {
      t.values(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(k)) = rows[r][picked[k]];
    }
  }
  return t;
}

ConfoundTable read_confounds(const std::filesystem::path& path, const std::vector<std::string>& columns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the confounds file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_confounds(text.str(), path.string(), columns);
}

}  // namespace rtf
