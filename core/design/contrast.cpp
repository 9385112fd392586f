// Contrast expression parsing: longest-name matching over the design's columns, signed numeric weights.
#include "core/design/contrast.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace rtf {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t';
}
bool ends_name(std::string_view text, size_t pos) {
  return pos == text.size() || is_space(text[pos]) || text[pos] == '+' || text[pos] == '-' || text[pos] == '*' ||
         text[pos] == ';';
}

class ContrastParser {
 public:
  ContrastParser(std::string_view text, const std::vector<std::string>& names) : text_(text), names_(names) {}

  Eigen::VectorXd parse() {
    Eigen::VectorXd w = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(names_.size()));
    skip_space();
    if (pos_ == text_.size()) fail("is empty");
    bool first = true;
    while (pos_ < text_.size()) {
      double sign = 1.0;
      if (text_[pos_] == '+' || text_[pos_] == '-') {
        sign = text_[pos_] == '-' ? -1.0 : 1.0;
        ++pos_;
        skip_space();
      } else if (!first) {
        fail(fmt::format("expected '+' or '-' at character {}, found '{}'", pos_ + 1, text_[pos_]));
      }
      first = false;
      const auto [column, weight] = term();
      w(column) += sign * weight;
      skip_space();
    }
    if (w.isZero(0.0)) fail("has all weights zero");
    return w;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(fmt::format("contrast '{}' {}", text_, what));
  }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  std::optional<size_t> match_name() const {
    std::optional<size_t> best;
    for (size_t i = 0; i < names_.size(); ++i) {
      const std::string& n = names_[i];
      if (n.empty() || text_.substr(pos_, n.size()) != n || !ends_name(text_, pos_ + n.size())) continue;
      if (!best || n.size() > names_[*best].size()) best = i;
    }
    return best;
  }

  std::pair<Eigen::Index, double> term() {
    if (pos_ == text_.size()) fail("ends where a condition name should follow");
    double weight = 1.0;
    if (!match_name()) {
      const char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.') {
        const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), weight);
        if (ec != std::errc() || !std::isfinite(weight))
          fail(fmt::format("has a bad number at character {}", pos_ + 1));
        pos_ = static_cast<size_t>(end - text_.data());
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '*') {
          ++pos_;
          skip_space();
        }
        if (pos_ == text_.size()) fail("ends with a weight but no condition name");
      }
    }
    const auto column = match_name();
    if (!column) {
      size_t end = pos_;
      while (!ends_name(text_, end)) ++end;
      if (end == pos_) fail(fmt::format("expects a condition name at character {}", pos_ + 1));
      fail(fmt::format("names unknown condition '{}' at character {} (columns: {})", text_.substr(pos_, end - pos_),
                       pos_ + 1, fmt::join(names_, ", ")));
    }
    pos_ += names_[*column].size();
    return {static_cast<Eigen::Index>(*column), weight};
  }

  std::string_view text_;
  const std::vector<std::string>& names_;
  size_t pos_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Eigen::VectorXd parse_contrast(std::string_view expression, const std::vector<std::string>& column_names) {
  return ContrastParser(expression, column_names).parse();
}

Eigen::MatrixXd parse_f_contrast(std::string_view rows, const std::vector<std::string>& column_names) {
  std::vector<Eigen::VectorXd> parsed;
  size_t start = 0;
  for (;;) {
    const size_t semicolon = rows.find(';', start);
    const std::string_view row =
        trim(rows.substr(start, semicolon == std::string_view::npos ? std::string_view::npos : semicolon - start));
    if (row.empty()) {
      throw std::invalid_argument(fmt::format("F contrast '{}' has an empty row {}", rows, parsed.size() + 1));
    }
    parsed.push_back(parse_contrast(row, column_names));
    if (semicolon == std::string_view::npos) break;
    start = semicolon + 1;
  }
  Eigen::MatrixXd f(static_cast<Eigen::Index>(parsed.size()), static_cast<Eigen::Index>(column_names.size()));
  for (size_t r = 0; r < parsed.size(); ++r) f.row(static_cast<Eigen::Index>(r)) = parsed[r].transpose();
  return f;
}

NamedContrast parse_named_contrast(std::string_view spec, const std::vector<std::string>& column_names) {
  NamedContrast c;
  std::string_view expression = spec;
  if (const size_t eq = spec.find('='); eq != std::string_view::npos) {
    const std::string_view name = trim(spec.substr(0, eq));
    if (name.empty()) throw std::invalid_argument(fmt::format("contrast '{}' has an empty name before '='", spec));
    c.name = std::string(name);
    expression = spec.substr(eq + 1);
  } else {
    for (const char ch : spec) {
      if (!is_space(ch)) c.name += ch;
    }
  }
  c.weights = parse_f_contrast(expression, column_names);
  return c;
}

}  // namespace rtf
