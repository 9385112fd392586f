// Block and BIDS-event designs and their HRF-convolved, peak-normalised regressors.
#include "sim/phantom/design.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rtf::sim {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    std::string field = line.substr(start, tab == std::string::npos ? std::string::npos : tab - start);
    while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) field.pop_back();
    while (!field.empty() && field.front() == ' ') field.erase(field.begin());
    out.push_back(std::move(field));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return out;
}

bool parse_double(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}

}  // namespace

std::vector<Event> block_events(double on_s, double off_s, double run_s, const std::string& trial_type) {
  std::vector<Event> events;
  if (!(on_s > 0.0)) throw std::invalid_argument("block design: block-on must be > 0 s");
  for (int64_t k = 0;; ++k) {
    const double onset = off_s + static_cast<double>(k) * (on_s + off_s);
    if (onset >= run_s) break;
    events.push_back({onset, on_s, trial_type});
    if (off_s <= 0.0) break;  // one block covering the whole run
  }
  return events;
}

std::vector<Event> parse_events_tsv(std::string_view text, const std::string& name) {
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  int onset_col = -1, duration_col = -1, type_col = -1;
  std::vector<Event> events;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split_tabs(line);
    if (onset_col < 0) {
      for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i] == "onset") onset_col = static_cast<int>(i);
        if (fields[i] == "duration") duration_col = static_cast<int>(i);
        if (fields[i] == "trial_type") type_col = static_cast<int>(i);
      }
      if (onset_col < 0 || duration_col < 0) {
        throw std::invalid_argument(fmt::format(
            "{}: line {}: the header must name tab-separated columns 'onset' and 'duration' (BIDS events.tsv)", name,
            line_no));
      }
      continue;
    }
    if (fields.size() <= static_cast<size_t>(std::max(onset_col, duration_col))) {
      throw std::invalid_argument(
          fmt::format("{}: line {}: {} fields, fewer than the header's", name, line_no, fields.size()));
    }
    Event e;
    if (!parse_double(fields[static_cast<size_t>(onset_col)], e.onset_s)) {
      throw std::invalid_argument(fmt::format("{}: line {}: onset '{}' is not a number", name, line_no,
                                              fields[static_cast<size_t>(onset_col)]));
    }
    const std::string& d = fields[static_cast<size_t>(duration_col)];
    if (d == "n/a") {
      e.duration_s = 0.0;
    } else if (!parse_double(d, e.duration_s) || e.duration_s < 0.0) {
      throw std::invalid_argument(fmt::format("{}: line {}: duration '{}' is not a number >= 0", name, line_no, d));
    }
    if (type_col >= 0 && static_cast<size_t>(type_col) < fields.size()) {
      const std::string& t = fields[static_cast<size_t>(type_col)];
      if (!t.empty() && t != "n/a") e.trial_type = t;
    }
    events.push_back(std::move(e));
  }
  if (onset_col < 0) throw std::invalid_argument(fmt::format("{}: empty; expected a BIDS events.tsv header", name));
  if (events.empty()) throw std::invalid_argument(fmt::format("{}: no events after the header", name));
  return events;
}

std::vector<Event> read_events_tsv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the events file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_events_tsv(text.str(), path.string());
}

Design::Design(std::vector<Event> events, int64_t volumes, double tr_s, int microtime, const SpmHrfParams& hrf)
    : events_(std::move(events)), volumes_(volumes), tr_s_(tr_s), dt_(tr_s / microtime) {
  if (volumes < 1 || !(tr_s > 0.0) || microtime < 1)
    throw std::invalid_argument("design: bad volumes, TR or microtime");
  std::stable_sort(events_.begin(), events_.end(),
                   [](const Event& a, const Event& b) { return a.onset_s < b.onset_s; });
  for (const auto& e : events_) {
    if (condition_index(e.trial_type) < 0) conditions_.push_back(e.trial_type);
  }
  const std::vector<double> h = spm_hrf(dt_, hrf);
  const int64_t run_bins = volumes * microtime;  // [0, volumes * TR)
  const auto bins = static_cast<size_t>(run_bins + 1);
  for (size_t c = 0; c < conditions_.size(); ++c) {
    // Stimulus per bin [k dt, (k + 1) dt): the covered fraction of the bin; a zero-duration event is a stick of
    // unit area in seconds (1 / dt in its bin), like a 1 s event compressed to an instant.
    std::vector<double> u(bins, 0.0);
    for (const auto& e : events_) {
      if (e.trial_type != conditions_[c]) continue;
      if (e.duration_s <= 0.0) {
        const double k = std::floor(e.onset_s / dt_);
        if (k >= 0.0 && k < static_cast<double>(bins)) u[static_cast<size_t>(k)] += 1.0 / dt_;
        continue;
      }
      const double end = e.onset_s + e.duration_s;
      const auto k0 = static_cast<int64_t>(std::max(0.0, std::floor(e.onset_s / dt_)));
      const auto k1 = static_cast<int64_t>(std::min(static_cast<double>(bins), std::ceil(end / dt_)));
      for (int64_t k = k0; k < k1; ++k) {
        const double lo = std::max(e.onset_s, static_cast<double>(k) * dt_);
        const double hi = std::min(end, static_cast<double>(k + 1) * dt_);
        if (hi > lo) u[static_cast<size_t>(k)] += (hi - lo) / dt_;
      }
    }
    std::vector<double> r(bins, 0.0);
    for (size_t k = 0; k < bins; ++k) {
      double s = 0.0;
      const size_t jmax = std::min(k + 1, h.size());
      for (size_t j = 0; j < jmax; ++j) s += h[j] * u[k - j];
      r[k] = s;
    }
    double peak = 0.0;
    for (int64_t k = 0; k < run_bins; ++k) peak = std::max(peak, std::abs(r[static_cast<size_t>(k)]));
    if (peak > 0.0) {
      for (double& v : r) v /= peak;
    }
    peaks_.push_back(peak);
    fine_.push_back(std::move(r));
  }
}

int Design::condition_index(const std::string& trial_type) const {
  const auto it = std::find(conditions_.begin(), conditions_.end(), trial_type);
  return it == conditions_.end() ? -1 : static_cast<int>(it - conditions_.begin());
}

double Design::value(int c, double t_s) const {
  const auto& r = fine_[static_cast<size_t>(c)];
  const double pos = t_s / dt_;
  if (!(pos >= 0.0) || pos > static_cast<double>(r.size() - 1)) return 0.0;
  const auto k = static_cast<size_t>(pos);
  if (k + 1 >= r.size()) return r.back();
  const double f = pos - static_cast<double>(k);
  return (1.0 - f) * r[k] + f * r[k + 1];
}

std::vector<std::vector<double>> Design::sampled(double offset_s) const {
  std::vector<std::vector<double>> out(static_cast<size_t>(volumes_), std::vector<double>(conditions_.size()));
  for (int64_t t = 0; t < volumes_; ++t) {
    for (size_t c = 0; c < conditions_.size(); ++c) {
      out[static_cast<size_t>(t)][c] = value(static_cast<int>(c), static_cast<double>(t) * tr_s_ + offset_s);
    }
  }
  return out;
}

}  // namespace rtf::sim
