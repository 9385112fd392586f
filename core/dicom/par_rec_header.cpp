// Line by line: '#' comments (where the version and the end marker live), '.' general information, numeric image lines.
#include "core/dicom/par_rec_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace rtf::dicom {

ParError::ParError(std::string source, int line, const std::string& problem)
    : std::runtime_error(line > 0 ? fmt::format("{}: line {}: {}", source, line, problem)
                                  : fmt::format("{}: {}", source, problem)),
      source_(std::move(source)),
      line_(line) {}

int image_line_columns(ParVersion version) {
  switch (version) {
    case ParVersion::kV4:
      return 41;
    case ParVersion::kV41:
      return 48;
    case ParVersion::kV42:
      return 49;
  }
  return 0;
}

std::string to_string(ParVersion version) {
  switch (version) {
    case ParVersion::kV4:
      return "V4";
    case ParVersion::kV41:
      return "V4.1";
    case ParVersion::kV42:
      return "V4.2";
  }
  return "V?";
}

double ParImage::floating_point_value(double pixel_value) const {
  const double divisor = rescale_slope * scale_slope;
  return divisor == 0.0 ? 0.0 : display_value(pixel_value) / divisor;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::optional<double> to_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double value = 0.0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "Max.  number of   echoes" -> "Max. number of echoes".
std::string collapse_blanks(std::string_view s) {
  std::string out;
  for (const std::string_view t : tokens(s)) {
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

// The version in "# CLINICAL TRYOUT   Research image export tool     V4.2"; nullopt on other comment lines.
std::optional<std::string> version_text(std::string_view comment) {
  if (lower(comment).find("research image export tool") == std::string::npos) return std::nullopt;
  const std::vector<std::string_view> words = tokens(comment);
  for (auto it = words.rbegin(); it != words.rend(); ++it) {
    if (it->size() > 1 && ((*it)[0] == 'V' || (*it)[0] == 'v')) return std::string(it->substr(1));
  }
  return std::string();
}

class Parser {
 public:
  Parser(std::string source) : source_(std::move(source)) {}

  ParHeader parse(std::string_view text) {
    int number = 0;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find('\n', start), text.size());
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++number;
      parse_line(line, number);
      if (end == text.size()) break;
      start = end + 1;
    }
    if (!version_) {
      if (pending_.empty())
        throw ParError(source_, 0, "no version line ('Research image export tool V4.x') and no image lines");
      version_ = version_for_columns(pending_.front().second);
      header_.version_from_columns = true;
    }
    header_.version = *version_;
    for (const auto& [line_number, line] : pending_) header_.images.push_back(image(line, line_number));
    return header_;
  }

 private:
  void parse_line(std::string_view line, int number) {
    const std::string_view t = trim(line);
    if (t.empty()) return;
    if (t.front() == '#') {
      comment(t, number);
    } else if (t.front() == '.') {
      general(t.substr(1), number);
    } else if (std::isdigit(static_cast<unsigned char>(t.front())) || t.front() == '-' || t.front() == '+') {
      pending_.emplace_back(number, t);
    } else {
      throw ParError(source_, number, "neither a comment ('#'), a general information line ('.') nor an image line");
    }
  }

  void comment(std::string_view line, int number) {
    if (lower(line).find("end of data description file") != std::string::npos) header_.complete = true;
    const std::optional<std::string> v = version_text(line);
    if (!v) return;
    if (*v == "4") {
      version_ = ParVersion::kV4;
    } else if (*v == "4.1") {
      version_ = ParVersion::kV41;
    } else if (*v == "4.2") {
      version_ = ParVersion::kV42;
    } else {
      throw ParError(source_, number, fmt::format("PAR version '{}' is not supported (V4, V4.1 and V4.2 are)", *v));
    }
  }

  ParVersion version_for_columns(std::string_view line) const {
    const size_t n = tokens(line).size();
    for (const ParVersion v : {ParVersion::kV4, ParVersion::kV41, ParVersion::kV42}) {
      if (n == static_cast<size_t>(image_line_columns(v))) return v;
    }
    throw ParError(source_, pending_.front().first,
                   fmt::format("no version line, and {} values on the first image line match no PAR version "
                               "(V4: 41, V4.1: 48, V4.2: 49)",
                               n));
  }

  // ". Max. number of echoes   :   1"
  void general(std::string_view rest, int number) {
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      throw ParError(source_, number, "general information line without ':' between name and value");
    }
    const std::string name = collapse_blanks(rest.substr(0, colon));
    const std::string_view value = trim(rest.substr(colon + 1));
    header_.general.fields[name] = std::string(value);
    const std::string key = lower(name);
    ParGeneralInfo& g = header_.general;
    const auto starts = [&](std::string_view prefix) { return key.rfind(prefix, 0) == 0; };
    if (starts("patient name")) {
      g.patient_name = value;
    } else if (starts("examination name")) {
      g.examination_name = value;
    } else if (starts("protocol name")) {
      g.protocol_name = value;
    } else if (starts("examination date/time")) {
      g.examination_date_time = value;
    } else if (starts("series type")) {
      g.series_type = collapse_blanks(value);
    } else if (starts("acquisition nr")) {
      g.acquisition_nr = integer(value, name, number);
    } else if (starts("reconstruction nr")) {
      g.reconstruction_nr = integer(value, name, number);
    } else if (starts("scan duration")) {
      g.scan_duration_s = real(value, name, number);
    } else if (starts("max. number of cardiac phases")) {
      g.max_cardiac_phases = integer(value, name, number);
    } else if (starts("max. number of echoes")) {
      g.max_echoes = integer(value, name, number);
    } else if (starts("max. number of slices")) {
      g.max_slices = integer(value, name, number);
    } else if (starts("max. number of dynamics")) {
      g.max_dynamics = integer(value, name, number);
    } else if (starts("max. number of mixes")) {
      g.max_mixes = integer(value, name, number);
    } else if (starts("max. number of diffusion values")) {
      g.max_diffusion_values = integer(value, name, number);
    } else if (starts("max. number of gradient orients")) {
      g.max_gradient_orients = integer(value, name, number);
    } else if (starts("number of label types")) {
      g.label_types = integer(value, name, number);
    } else if (starts("patient position")) {
      g.patient_position = collapse_blanks(value);
    } else if (starts("preparation direction")) {
      g.preparation_direction = collapse_blanks(value);
    } else if (starts("technique")) {
      g.technique = collapse_blanks(value);
    } else if (starts("scan mode")) {
      g.scan_mode = collapse_blanks(value);
    } else if (starts("scan resolution")) {
      if (const auto v = reals(value, 2, name, number)) {
        g.scan_resolution = std::array<int, 2>{whole((*v)[0], name, number), whole((*v)[1], name, number)};
      }
    } else if (starts("repetition time")) {
      const std::vector<std::string_view> words = tokens(value);
      for (const std::string_view w : words) g.repetition_time_ms.push_back(checked(w, name, number));
    } else if (starts("fov")) {
      g.fov_mm = triple(value, name, number);
    } else if (starts("water fat shift")) {
      g.water_fat_shift_px = real(value, name, number);
    } else if (starts("angulation midslice")) {
      g.angulation_deg = triple(value, name, number);
    } else if (starts("off centre midslice")) {
      g.off_centre_mm = triple(value, name, number);
    } else if (starts("epi factor")) {
      g.epi_factor = integer(value, name, number);
    } else if (starts("dynamic scan")) {
      if (const auto v = integer(value, name, number)) g.dynamic_scan = *v != 0;
    } else if (starts("diffusion <") || key == "diffusion") {
      if (const auto v = integer(value, name, number)) g.diffusion = *v != 0;
    }
  }

  double checked(std::string_view word, std::string_view name, int number) const {
    const std::optional<double> v = to_number(word);
    if (!v) throw ParError(source_, number, fmt::format("'{}' is not a number ({})", word, name));
    return *v;
  }

  int whole(double v, std::string_view name, int number) const {
    if (v != std::floor(v) || std::fabs(v) > 2e9) {
      throw ParError(source_, number, fmt::format("{} is not a whole number ({})", v, name));
    }
    return static_cast<int>(v);
  }

  // The first `count` numbers of a value (empty -> nullopt: XTC exports leave some fields blank).
  std::optional<std::vector<double>> reals(std::string_view value, size_t count, std::string_view name,
                                           int number) const {
    const std::vector<std::string_view> words = tokens(value);
    if (words.empty()) return std::nullopt;
    if (words.size() < count) {
      throw ParError(source_, number, fmt::format("{} needs {} numbers, has {}", name, count, words.size()));
    }
    std::vector<double> out;
    for (size_t i = 0; i < count; ++i) out.push_back(checked(words[i], name, number));
    return out;
  }

  std::optional<double> real(std::string_view value, std::string_view name, int number) const {
    const auto v = reals(value, 1, name, number);
    return v ? std::optional<double>((*v)[0]) : std::nullopt;
  }

  std::optional<int> integer(std::string_view value, std::string_view name, int number) const {
    const auto v = real(value, name, number);
    return v ? std::optional<int>(whole(*v, name, number)) : std::nullopt;
  }

  std::optional<std::array<double, 3>> triple(std::string_view value, std::string_view name, int number) const {
    const auto v = reals(value, 3, name, number);
    return v ? std::optional<std::array<double, 3>>({(*v)[0], (*v)[1], (*v)[2]}) : std::nullopt;
  }

  ParImage image(std::string_view line, int number) const {
    const std::vector<std::string_view> words = tokens(line);
    const size_t expected = static_cast<size_t>(image_line_columns(*version_));
    if (words.size() != expected) {
      throw ParError(source_, number,
                     fmt::format("{} values on an image line, a {} image line has {}", words.size(),
                                 to_string(*version_), expected));
    }
    size_t column = 0;
    const auto next_real = [&](std::string_view what) {
      const std::optional<double> v = to_number(words[column]);
      if (!v) {
        throw ParError(source_, number,
                       fmt::format("column {} ({}): '{}' is not a number", column + 1, what, words[column]));
      }
      ++column;
      return *v;
    };
    const auto next_int = [&](std::string_view what) {
      const double v = next_real(what);
      if (v != std::floor(v) || std::fabs(v) > 2e9) {
        throw ParError(source_, number, fmt::format("column {} ({}): {} is not a whole number", column, what, v));
      }
      return static_cast<int>(v);
    };
    ParImage im;
    im.line = number;
    im.slice = next_int("slice number");
    im.echo = next_int("echo number");
    im.dynamic = next_int("dynamic scan number");
    im.cardiac_phase = next_int("cardiac phase number");
    im.image_type = next_int("image_type_mr");
    im.scanning_sequence = next_int("scanning sequence");
    im.index_in_rec = next_int("index in REC file");
    im.pixel_bits = next_int("image pixel size");
    im.scan_percentage = next_int("scan percentage");
    im.recon_resolution[0] = next_int("recon resolution x");
    im.recon_resolution[1] = next_int("recon resolution y");
    im.rescale_intercept = next_real("rescale intercept");
    im.rescale_slope = next_real("rescale slope");
    im.scale_slope = next_real("scale slope");
    im.window_centre = next_real("window center");  // declared integer, written as a float by XTC
    im.window_width = next_real("window width");
    for (double& a : im.angulation_deg) a = next_real("image angulation");
    for (double& o : im.offcentre_mm) o = next_real("image offcentre");
    im.slice_thickness_mm = next_real("slice thickness");
    im.slice_gap_mm = next_real("slice gap");
    im.display_orientation = next_int("image_display_orientation");
    im.slice_orientation = next_int("slice orientation");
    im.fmri_status = next_int("fmri_status_indication");
    im.image_type_ed_es = next_int("image_type_ed_es");
    for (double& s : im.pixel_spacing_mm) s = next_real("pixel spacing");
    im.echo_time_ms = next_real("echo_time");
    im.dynamic_begin_time_s = next_real("dyn_scan_begin_time");
    im.trigger_time_ms = next_real("trigger_time");
    im.diffusion_b_factor = next_real("diffusion_b_factor");
    im.averages = next_int("number of averages");
    im.flip_angle_deg = next_real("image_flip_angle");
    im.cardiac_frequency_bpm = next_int("cardiac frequency");
    im.min_rr_ms = next_int("minimum RR-interval");
    im.max_rr_ms = next_int("maximum RR-interval");
    im.turbo_factor = next_int("TURBO factor");
    im.inversion_delay_ms = next_real("Inversion delay");
    if (*version_ != ParVersion::kV4) {
      im.b_value_number = next_int("diffusion b value number");
      im.gradient_orientation_number = next_int("gradient orientation number");
      im.contrast_type = std::string(words[column++]);
      im.anisotropy_type = std::string(words[column++]);
      for (double& d : im.diffusion) d = next_real("diffusion");
    }
    if (*version_ == ParVersion::kV42) im.label_type = next_int("label type");
    if (im.slice < 1) throw ParError(source_, number, fmt::format("slice number {} (they count from 1)", im.slice));
    if (im.index_in_rec < 0) {
      throw ParError(source_, number, fmt::format("index in REC file {} is negative", im.index_in_rec));
    }
    return im;
  }

  std::string source_;
  ParHeader header_;
  std::optional<ParVersion> version_;
  std::vector<std::pair<int, std::string_view>> pending_;  // image lines, parsed once the version is known
};

}  // namespace

ParHeader parse_par(std::string_view text, const std::string& source) {
  return Parser(source).parse(text);
}

ParHeader read_par(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ParError(file.string(), 0, "cannot open the PAR file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ParError(file.string(), 0, "cannot read the PAR file");
  return parse_par(text.str(), file.string());
}

}  // namespace rtf::dicom
