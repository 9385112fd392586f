// PipelineConfig from TOML (toml++): typed reads that name the key on error, unknown keys refused, validation.
#include "stream/pipeline/pipeline_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/decoding/decoder_model_file.hpp"
#include "core/io/data_lookup.hpp"
#include "core/registration/linear_registration.hpp"
#include "core/registration/nonlinear_registration.hpp"
#include "core/registration/subject_space.hpp"
#include "stream/pipeline/warm_up.hpp"

namespace rtf::stream {

namespace {

// Reads keys of one table and remembers which; finish() refuses the rest.
class Section {
 public:
  Section(const toml::table* table, std::string name) : table_(table), name_(std::move(name)) {}

  template <typename T>
  void read(const char* key, T& out) {
    const toml::node* n = find(key);
    if (n == nullptr) return;
    if constexpr (std::is_same_v<T, bool>) {
      if (!n->is_boolean()) fail(key, "true or false");
      out = *n->value<bool>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!n->is_number()) fail(key, "a number");
      out = *n->value<double>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!n->is_integer()) fail(key, "an integer");
      const int64_t v = *n->value<int64_t>();
      if (v < 0) fail(key, "a non-negative integer");
      out = static_cast<T>(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (n->is_integer()) {  // e.g. motion reference = 0
        out = std::to_string(*n->value<int64_t>());
        return;
      }
      if (!n->is_string()) fail(key, "a string");
      out = *n->value<std::string>();
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      const toml::array* a = n->as_array();
      if (a == nullptr) fail(key, "an array of numbers");
      out.clear();
      for (const toml::node& e : *a) {
        if (!e.is_number()) fail(key, "an array of numbers");
        out.push_back(*e.value<double>());
      }
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      const toml::array* a = n->as_array();
      if (a == nullptr) fail(key, "an array of strings");
      out.clear();
      for (const toml::node& e : *a) {
        if (!e.is_string()) fail(key, "an array of strings");
        out.push_back(*e.value<std::string>());
      }
    }
  }

  // A region: { sphere_mm = [x, y, z], radius_mm = r } | { mask = "file" } | { atlas = "name" }, optional name.
  RoiSpec roi(const toml::node& n, const std::string& key, const std::filesystem::path& base) {
    const toml::table* t = n.as_table();
    if (t == nullptr) fail(key.c_str(), "a table such as { sphere_mm = [x, y, z], radius_mm = 8 }");
    Section s(t, name_ + "." + key);
    RoiSpec r;
    s.read("name", r.name);
    if (const toml::node* c = s.find("sphere_mm")) {
      const toml::array* a = c->as_array();
      if (a == nullptr || a->size() != 3) s.fail("sphere_mm", "three numbers (world mm)");
      std::array<double, 3> centre{};
      for (size_t i = 0; i < 3; ++i) {
        if (!(*a)[i].is_number()) s.fail("sphere_mm", "three numbers (world mm)");
        centre[i] = *(*a)[i].value<double>();
      }
      r.sphere_mm = centre;
    }
    s.read("radius_mm", r.radius_mm);
    s.read("mask", r.mask);
    if (!r.mask.empty()) r.mask = (base / r.mask).string();
    s.read("atlas", r.atlas_region);
    std::string space;
    s.read("space", space);
    s.finish();
    const int kinds = (r.sphere_mm ? 1 : 0) + (r.mask.empty() ? 0 : 1) + (r.atlas_region.empty() ? 0 : 1);
    if (kinds != 1) fail(key.c_str(), "exactly one of sphere_mm, mask or atlas");
    if (space == "template") {
      r.space = RoiSpace::kTemplate;
    } else if (space == "epi") {
      r.space = RoiSpace::kEpi;
    } else if (!space.empty()) {
      s.fail("space", "\"template\" or \"epi\"");
    }
    if (!space.empty() && !r.atlas_region.empty()) s.fail("space", "left out for an atlas region (the atlas's space)");
    if (r.name.empty()) r.name = r.atlas_region.empty() ? key : r.atlas_region;
    return r;
  }

  const toml::node* find(const char* key) {
    if (table_ == nullptr) return nullptr;
    const toml::node* n = table_->get(key);
    if (n != nullptr) used_.insert(key);
    return n;
  }

  void finish() const {
    if (table_ == nullptr) return;
    for (auto&& [k, v] : *table_) {
      if (!used_.count(std::string(k.str()))) {
        throw std::invalid_argument(fmt::format("config: unknown key '{}' in [{}]", k.str(), name_));
      }
    }
  }

  [[noreturn]] void fail(const char* key, const char* expected) const {
    throw std::invalid_argument(fmt::format("config: [{}] {} must be {}", name_, key, expected));
  }

 private:
  const toml::table* table_;
  std::string name_;
  std::set<std::string> used_;
};

std::string resolve(const std::filesystem::path& base, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || base.empty()) return path;
  return (base / path).string();
}

}  // namespace

FeedbackMode parse_feedback_mode(const std::string& name) {
  if (name == "roi-psc") return FeedbackMode::kRoiPsc;
  if (name == "differential") return FeedbackMode::kDifferentialPsc;
  if (name == "connectivity") return FeedbackMode::kConnectivity;
  throw std::invalid_argument(fmt::format("feedback mode '{}' is not roi-psc, differential or connectivity", name));
}

FeedbackProtocol parse_feedback_protocol(const std::string& name) {
  if (name == "continuous") return FeedbackProtocol::kContinuous;
  if (name == "intermittent") return FeedbackProtocol::kIntermittent;
  throw std::invalid_argument(fmt::format("feedback protocol '{}' is not continuous or intermittent", name));
}

PipelineConfig parse_pipeline_config(std::string_view toml_text, const std::filesystem::path& base_dir) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(fmt::format("config: line {}: {}", e.source().begin.line, e.description()));
  }
  PipelineConfig c;
  std::set<std::string> sections{"server", "run",          "registration", "motion", "smoothing", "glm",
                                 "cca",    "connectivity", "feedback",     "qa",     "decoder",   "outputs"};
  for (auto&& [k, v] : root) {
    if (!sections.count(std::string(k.str())) || !v.is_table()) {
      throw std::invalid_argument(
          fmt::format("config: unknown section '{}' (sections: server, run, registration, motion, smoothing, "
                      "glm, cca, connectivity, feedback, qa, decoder, outputs)",
                      k.str()));
    }
  }
  auto table = [&](const char* name) { return root.get_as<toml::table>(name); };
  Section server(table("server"), "server");
  server.read("listen", c.listen);
  server.read("session_dir", c.session_dir);
  c.session_dir = resolve(base_dir, c.session_dir);
  server.read("session", c.session);
  server.read("fsync", c.fsync);
  server.read("ring", c.ring);
  server.read("queue", c.queue);
  server.read("max_open_runs", c.max_open_runs);
  server.read("run_idle_close_s", c.run_idle_close_s);
  server.read("max_volumes", c.max_volumes);
  server.read("exit_after_runs", c.exit_after_runs);
  server.read("max_live_runs", c.max_live_runs);
  server.read("live_run_idle_s", c.live_run_idle_s);
  server.finish();
  Section run(table("run"), "run");
  run.read("tr", c.tr_s);
  run.read("volumes", c.volumes);
  run.read("events", c.events);
  c.events = resolve(base_dir, c.events);
  run.read("warm", c.warm);
  if (!is_grid_spec(c.warm)) c.warm = resolve(base_dir, c.warm);
  run.finish();
  Section reg(table("registration"), "registration");
  reg.read("t1", c.t1);
  c.t1 = resolve(base_dir, c.t1);
  reg.read("template", c.template_name);
  if (c.template_name != "colin27" && c.template_name != "colin27-head" && c.template_name != "mni152") {
    c.template_name = resolve(base_dir, c.template_name);  // a path, not a template's name
  }
  reg.read("normalization", c.normalization);
  c.normalization = resolve(base_dir, c.normalization);
  reg.read("warp", c.normalization_warp);
  reg.read("epi_levels", c.epi_levels);
  reg.read("warp_levels", c.normalization_levels);
  reg.finish();
  Section motion(table("motion"), "motion");
  motion.read("enabled", c.motion);
  motion.read("reference", c.motion_reference);
  if (!motion_reference_is_index(c.motion_reference)) {
    c.motion_reference = resolve(base_dir, c.motion_reference);
  }
  motion.finish();
  Section smoothing(table("smoothing"), "smoothing");
  smoothing.read("fwhm_mm", c.smoothing_fwhm_mm);
  smoothing.finish();
  Section glm(table("glm"), "glm");
  glm.read("cumulative", c.glm_cumulative);
  glm.read("sliding_window", c.glm_window);
  glm.read("ar1", c.glm_ar1);
  glm.read("highpass_s", c.glm_highpass_s);
  glm.read("motion_regressors", c.glm_motion_regressors);
  glm.read("contrasts", c.contrasts);
  glm.read("map", c.published_map);
  glm.finish();
  Section cca(table("cca"), "cca");
  cca.read("enabled", c.cca);
  cca.read("window", c.cca_window);
  cca.read("period_s", c.cca_period_s);
  cca.finish();
  Section conn(table("connectivity"), "connectivity");
  conn.read("atlas", c.atlas);
  if (c.atlas != "aal") c.atlas = resolve(base_dir, c.atlas);
  conn.read("atlas_names", c.atlas_names);
  c.atlas_names = resolve(base_dir, c.atlas_names);
  conn.read("atlas_transform", c.atlas_transform);
  c.atlas_transform = resolve(base_dir, c.atlas_transform);
  conn.read("window", c.connectivity_window);
  if (const toml::node* n = conn.find("seed")) c.seed = conn.roi(*n, "seed", base_dir);
  conn.finish();
  Section fb(table("feedback"), "feedback");
  fb.read("enabled", c.feedback);
  std::string mode = "roi-psc", protocol = "continuous";
  fb.read("mode", mode);
  c.feedback_mode = parse_feedback_mode(mode);
  fb.read("protocol", protocol);
  c.feedback_protocol = parse_feedback_protocol(protocol);
  if (const toml::node* n = fb.find("rois")) {
    const toml::array* a = n->as_array();
    if (a == nullptr) fb.fail("rois", "an array of regions");
    for (size_t i = 0; i < a->size(); ++i)
      c.feedback_rois.push_back(fb.roi((*a)[i], fmt::format("rois[{}]", i), base_dir));
  }
  fb.read("baseline", c.baseline_condition);
  fb.read("hrf_delay_s", c.hrf_delay_s);
  fb.read("kalman", c.kalman);
  fb.read("scaling", c.scaling);
  fb.finish();
  Section qa(table("qa"), "qa");
  qa.read("enabled", c.qa);
  qa.read("mask", c.qa_mask);
  if (!c.qa_mask.empty()) c.qa_mask = (base_dir / c.qa_mask).string();
  LiveQaOptions& q = c.qa_options;
  std::string fd_filter, censor;
  qa.read("fd_filter", fd_filter);
  if (!fd_filter.empty()) {
    try {
      q.fd_filter.kind = parse_fd_filter(fd_filter);
    } catch (const std::invalid_argument&) {
      qa.fail("fd_filter", "\"none\", \"notch\" or \"lowpass\"");
    }
  }
  qa.read("fd_band_low_bpm", q.fd_filter.band_low_bpm);
  qa.read("fd_band_high_bpm", q.fd_filter.band_high_bpm);
  qa.read("fd_cutoff_bpm", q.fd_filter.cutoff_bpm);
  qa.read("fd_thresholds", q.fd_thresholds);
  qa.read("target_minutes", q.target_minutes);
  qa.read("censor", censor);
  if (!censor.empty()) {
    try {
      q.censor = parse_censor_rule(censor);
    } catch (const std::invalid_argument&) {
      qa.fail("censor", "\"firmm\" or \"power2014\"");
    }
  }
  qa.read("alarm_fd_mm", q.alarms.fd_mm);
  qa.read("alarm_outlier_fraction", q.alarms.outlier_fraction);
  qa.read("alarm_tsnr_min", q.alarms.tsnr_min);
  qa.read("alarm_tsnr_min_volumes", q.alarms.tsnr_min_volumes);
  qa.read("alarm_usable_target", q.alarms.usable_target);
  qa.read("slice_threshold", q.slices.threshold);
  qa.read("slice_history", q.slices.history);
  qa.read("slice_min_history", q.slices.min_history);
  qa.read("carpet_rows", q.carpet_rows);
  qa.read("tsnr_map_every", q.tsnr_map_every);
  qa.finish();
  Section decoder(table("decoder"), "decoder");
  decoder.read("model", c.decoder_model);
  c.decoder_model = resolve(base_dir, c.decoder_model);
  decoder.read("feedback", c.decoder_feedback);
  decoder.read("target", c.decoder_target);
  decoder.read("average_volumes", c.decoder_average_volumes);
  decoder.finish();
  Section out(table("outputs"), "outputs");
  out.read("results_pub", c.results_pub);
  out.read("feedback_tcp", c.feedback_tcp);
  out.read("feedback_udp", c.feedback_udp);
  out.finish();
  return c;
}

PipelineConfig upload_only_config(const std::filesystem::path& session_dir, int64_t ring) {
  PipelineConfig c;
  c.session_dir = session_dir.string();
  c.ring = ring;
  c.motion = false;
  c.smoothing_fwhm_mm = 0.0;
  c.glm_cumulative = false;
  c.glm_window = 0;
  c.cca = false;
  c.atlas.clear();
  c.feedback = false;
  c.results_pub.clear();
  c.feedback_tcp.clear();
  c.feedback_udp.clear();
  c.qa = false;
  c.connectivity_window = std::min<int64_t>(c.connectivity_window, ring);
  return c;
}

PipelineConfig load_pipeline_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("config: cannot open {}", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_pipeline_config(text.str(), path.parent_path());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path.string(), e.what()));
  }
}

void validate(const PipelineConfig& c) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("config: " + what);
  };
  require(!c.session_dir.empty(), "[server] session_dir is required");
  require(c.decoder_feedback.empty() || c.decoder_feedback == "probability" || c.decoder_feedback == "decision",
          fmt::format("[decoder] feedback = \"{}\": \"probability\", \"decision\" or \"\"", c.decoder_feedback));
  require(c.decoder_feedback.empty() || !c.decoder_model.empty(), "[decoder] feedback needs [decoder] model");
  require(c.decoder_average_volumes >= 1, "[decoder] average_volumes must be 1 or more");
  if (!c.decoder_model.empty()) {
    DecoderModelFile model;
    try {
      model = read_decoder_model(c.decoder_model);  // a model file that cannot work refuses the start, naming its key
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("config: [decoder] model: {}", e.what()));
    }
    const auto& classes = model.classes;
    require(c.decoder_target.empty() || std::find(classes.begin(), classes.end(), c.decoder_target) != classes.end(),
            fmt::format("[decoder] target \"{}\" is not a class of the model ({})", c.decoder_target,
                        fmt::join(classes, ", ")));
    require(c.decoder_feedback.empty() || !c.decoder_target.empty() || classes.size() == 2,
            fmt::format("[decoder] feedback with {} classes needs [decoder] target", classes.size()));
    require(c.decoder_feedback == "probability" ? has_probabilities(model.model) : true,
            fmt::format("[decoder] feedback = \"probability\": the {} model has no probabilities (use \"decision\")",
                        decoder_model_name(model.model)));
    require(c.feedback_protocol != FeedbackProtocol::kIntermittent || c.decoder_feedback.empty() ||
                (c.volumes > 0 && !c.events.empty()),
            "[decoder] feedback with the intermittent protocol needs [run] volumes and events");
  }
  if (c.qa) {
    try {
      validate(c.qa_options);
      if (c.tr_s > 0 && c.qa_options.fd_filter.kind != FdFilterKind::kNone) {
        try {
          (void)MotionFilter(c.qa_options.fd_filter, c.tr_s);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(fmt::format("[qa] fd_filter at TR {} s: {}", c.tr_s, e.what()));
        }
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("config: {}", e.what()));
    }
  }
  require(c.fsync == "every-volume" || c.fsync == "none", "[server] fsync must be every-volume or none");
  require(c.ring >= 2, "[server] ring must hold at least 2 volumes");
  require(c.queue >= 1, "[server] queue must be at least 1");
  require(c.max_open_runs >= 1 && c.max_open_runs <= 100000, "[server] max_open_runs must be 1..100000");
  require(std::isfinite(c.run_idle_close_s) && c.run_idle_close_s >= 0,
          "[server] run_idle_close_s must be a number of seconds >= 0 (0: never)");
  require(c.max_live_runs >= 1 && c.max_live_runs <= 64,
          fmt::format("[server] max_live_runs {} must be 1..64", c.max_live_runs));
  require(std::isfinite(c.live_run_idle_s) && c.live_run_idle_s > 0,
          "[server] live_run_idle_s must be a positive number of seconds");
  require(c.glm_window == 0 || (c.glm_window >= 2 && c.glm_window <= c.ring),
          fmt::format("[glm] sliding_window {} must be 0 or 2..ring ({})", c.glm_window, c.ring));
  require(!c.cca || (c.cca_window >= 8 && c.cca_window <= c.ring),
          fmt::format("[cca] window {} must be 8..ring ({})", c.cca_window, c.ring));
  require(c.connectivity_window >= 2 && c.connectivity_window <= c.ring,
          fmt::format("[connectivity] window {} must be 2..ring ({})", c.connectivity_window, c.ring));
  require(c.smoothing_fwhm_mm >= 0.0, "[smoothing] fwhm_mm must be >= 0");
  require(c.glm_ar1 > -1.0 && c.glm_ar1 < 1.0, "[glm] ar1 must lie in (-1, 1)");
  require(c.tr_s >= 0.0, "[run] tr must be >= 0");
  require(c.volumes == 0 || !c.events.empty() || !c.feedback, "[run] volumes without events: give [run] events");
  if (c.feedback && c.feedback_mode != FeedbackMode::kRoiPsc) {
    require(c.feedback_rois.size() == 2, "[feedback] differential and connectivity modes need two rois");
  }
  require(c.normalization.empty() || !c.t1.empty(),
          "[registration] normalization (T1 -> template) needs the T1 it was computed from: give [registration] t1");
  require(!c.registration() || c.atlas_transform.empty(),
          "[connectivity] atlas_transform and [registration] both place the atlas: give one of them");
  try {
    if (!c.epi_levels.empty()) parse_linear_levels(c.epi_levels);
    if (!c.normalization_levels.empty()) parse_nonlinear_levels(c.normalization_levels);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("config: [registration] {}", e.what()));
  }
}

bool motion_reference_is_index(const std::string& reference) {
  return reference.find_first_not_of("0123456789") == std::string::npos;
}

RoiSpace PipelineConfig::space_of(const RoiSpec& roi) const {
  if (roi.space != RoiSpace::kAuto) return roi.space;
  return registration() ? RoiSpace::kTemplate : RoiSpace::kEpi;
}

std::filesystem::path registration_template_path(const PipelineConfig& c) {
  const std::string name = c.template_name.empty() ? "colin27" : c.template_name;
  if ((name == "colin27" || name == "colin27-head") && !c.data_dir.empty()) {
    auto path = c.data_dir / (name == "colin27" ? kDefaultTemplate : "mricron/ch2.nii.gz");
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return resolve_template(name, executable_dir());
}

void check_registration_inputs(const PipelineConfig& c) {
  if (!c.registration()) return;
  auto checked = [](const char* key, auto&& check) {
    try {
      check();
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("config: [registration] {}: {}", key, e.what()));
    }
  };
  if (!c.t1.empty()) checked("t1", [&] { check_anatomy(c.t1, "T1"); });
  if (!c.normalization.empty()) {
    checked("normalization", [&] { check_normalization(c.normalization); });
  } else {
    checked("template", [&] { check_anatomy(registration_template_path(c), "template"); });
  }
}

}  // namespace rtf::stream
