// The helpers of cli/command_support.hpp: device opening, rank-0 checks, numeric option checks, the live pipeline's
// flags and the Markdown command reference.
#include "cli/command_support.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/io/data_lookup.hpp"
#include "core/scale/device_list.hpp"
#include "core/scale/ranks.hpp"

// ---- Devices and rank-0 checks ----
namespace rtf::cli {

std::unique_ptr<Device> open_device(const GlobalOptions& globals) {
  // Commands that do not spread their work (core/scale) run on rank 0 alone under mpirun: the others end here.
  const Ranks& ranks = Ranks::world();
  if (ranks.mpi() && ranks.size() > 1) {
    if (!ranks.root()) {
      Ranks::finalize();
      std::exit(0);
    }
    spdlog::warn("this command does not spread over MPI ranks: rank 0 runs it alone");
  }
  std::unique_ptr<Device> device;
  if (globals.devices.empty()) {
    device = Device::open(globals.device);
  } else {
    device = std::make_unique<Device>(resolve_devices(globals.devices).front());
    spdlog::warn("--devices: this command works on one device, the first of '{}'", globals.devices);
  }
  spdlog::info("device: {} [{}]", device->info().label(), device->info().type_name());
  return device;
}

namespace {

CLI::Validator on_rank_zero(const CLI::Validator& check, const std::string& what) {
  return CLI::Validator([check](std::string& path) { return Ranks::world().root() ? check(path) : std::string(); },
                        what);
}

}  // namespace

CLI::Validator existing_file_on_rank_zero() {
  return on_rank_zero(CLI::ExistingFile, "FILE");
}
CLI::Validator existing_directory_on_rank_zero() {
  return on_rank_zero(CLI::ExistingDirectory, "DIR");
}

}  // namespace rtf::cli

namespace rtf::cli {

CLI::App& sim_group(CLI::App& app) {
  for (CLI::App* existing : app.get_subcommands({})) {
    if (existing->get_name() == "sim") return *existing;
  }
  auto* sim = app.add_subcommand("sim", "Scanner simulator: replay a 4D NIfTI to a server, or make a phantom");
  sim->require_subcommand(1);
  return *sim;
}

}  // namespace rtf::cli

// ---- Numeric option checks, and the pass that adds the finite check to every float option ----
namespace rtf::cli {

namespace {

// The value of `text` where it is a finite number; nullopt otherwise.
std::optional<double> finite_number(const std::string& text) {
  double value = 0;
  if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) return std::nullopt;
  return value;
}

CLI::Validator number_check(const std::string& description, std::function<bool(double)> accept,
                            std::string requirement) {
  return {[accept = std::move(accept), requirement = std::move(requirement)](std::string& text) -> std::string {
            const std::optional<double> value = finite_number(text);
            if (!value) return fmt::format("must be a finite number (got {})", text);
            if (!accept(*value)) return fmt::format("{} (got {})", requirement, text);
            return {};
          },
          description};
}

const CLI::Validator& finite_check() {
  static const CLI::Validator kCheck(
      [](std::string& text) -> std::string {
        return finite_number(text) ? std::string() : fmt::format("must be a finite number (got {})", text);
      },
      "", "FINITE");
  return kCheck;
}

}  // namespace

CLI::Validator positive(const std::string& what) {
  return number_check(
      "POSITIVE", [](double v) { return v > 0; },
      what.empty() ? std::string("must be a number > 0") : what + " must be > 0");
}

CLI::Validator non_negative() {
  return number_check(
      "NONNEGATIVE", [](double v) { return v >= 0; }, "must be a number >= 0");
}

CLI::Validator at_least(double least, const std::string& what) {
  return number_check(
      fmt::format("AT LEAST {}", least), [least](double v) { return v >= least; },
      fmt::format("{} must be at least {}", what, least));
}

void refuse_non_finite_numbers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name().rfind("FLOAT", 0) == 0) option->check(finite_check());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_non_finite_numbers(*sub);
}

}  // namespace rtf::cli

// ---- The live pipeline's flags: registration, and the file + given-flags merge ----
namespace rtf::cli {

void add_pipeline_flags(CLI::App& cmd, PipelineFlags& f) {
  auto& v = f.values;
  cmd.add_option("--config", f.config_file, "Session file (TOML; examples/session.toml); the flags below override it")
      ->check(CLI::ExistingFile);
  cmd.add_option("--ring", v.ring, "Volumes kept on the device (at least the largest window)")
      ->check(CLI::Range(int64_t{2}, int64_t{100000}))
      ->capture_default_str();
  cmd.add_option("--tr", v.tr_s, "TR in seconds (default: the volumes' headers)")->check(rtf::cli::positive());
  cmd.add_option("--volumes", v.volumes, "Volumes per run (the design's length; needed for GLM and feedback)")
      ->check(rtf::cli::non_negative());
  cmd.add_option("--events", v.events, "BIDS events.tsv of the runs (design for GLM, CCA and feedback)")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--no-motion", f.no_motion, "No motion correction");
  cmd.add_flag("--no-qa", f.no_qa, "No live QA stage (no qa object in the outputs, no runs/<run>/qa_* files)");
  cmd.add_option("--qa-mask", v.qa_mask,
                 "QA brain mask on the runs' grid (default: the brain mask of the first volume)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--qa-fd-filter", f.qa_fd_filter,
                 "Respiration filter of the motion before the QA's FD: none, notch or lowpass (for TR < 1 s)");
  cmd.add_option(
         "--decoder-model", v.decoder_model,
         "Live decoder: a model file (rtfmri decode's PREFIX_model.json) applied to every volume; each feedback "
         "line gets its decision, probabilities and status (docs/algorithms/decoding.md)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--decoder-feedback", v.decoder_feedback,
                 "The feedback value from the decoder: probability (of --decoder-target) or decision")
      ->check(CLI::IsMember({"probability", "decision"}));
  cmd.add_option("--decoder-target", v.decoder_target, "The decoded feedback's class (default: the positive class)");
  cmd.add_option("--decoder-average", v.decoder_average_volumes,
                 "Decoded feedback: the mean over this many volumes (intermittent: a block's last ones)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--motion-ref", v.motion_reference,
                 "Motion reference: a volume index of each run, or a 3D NIfTI on the runs' grid")
      ->capture_default_str();
  cmd.add_option("--fwhm", v.smoothing_fwhm_mm, "Smoothing (mm) before the statistics; 0: off")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd.add_option("--contrast", v.contrasts, "NAME=EXPR over the design's columns (repeatable)");
  cmd.add_option("--glm-window", v.glm_window, "Sliding-window GLM length in volumes (0: off)")->capture_default_str();
  cmd.add_option("--cca-window", v.cca_window, "Sliding-window CCA length in volumes")->capture_default_str();
  cmd.add_option("--atlas", v.atlas, "ROI x ROI atlas: aal, a label NIfTI, or '' (off)")->capture_default_str();
  cmd.add_option("--atlas-transform", v.atlas_transform,
                 "ITK affine from the atlas's template space to the EPI's (rtfmri register EPI TEMPLATE --cost mi's "
                 "PREFIX_affine.txt): the atlas is pulled onto the EPI grid through its inverse")
      ->check(CLI::ExistingFile);
  cmd.add_option("--t1", v.t1,
                 "The subject's T1 (3D NIfTI): each run's reference EPI is registered to it (rigid, MI) and the T1 "
                 "normalised to --template at server start; the atlas and template-space ROIs are pulled onto the "
                 "EPI ([registration] t1; docs/live.md)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--template", v.template_name,
                 "Template of the atlas and ROIs: colin27, colin27-head, mni152 or a NIfTI; without --t1 the EPI is "
                 "registered to it directly (12 dof, MI) ([registration] template)");
  cmd.add_option("--normalization", v.normalization,
                 "PREFIX of an earlier `rtfmri normalize T1 --out PREFIX` (PREFIX_affine.txt, "
                 "PREFIX_inverse_warp.nii.gz): used instead of normalising --t1 live ([registration] normalization)");
  cmd.add_flag("--registration-affine-only", f.no_warp,
               "Normalise --t1 to the template with the affine only, no non-linear step ([registration] warp = false)");
  cmd.add_option("--feedback-roi", f.feedback_roi, "Feedback ROI as a sphere: x,y,z[,radius] in mm (see --roi-space)");
  cmd.add_option("--roi-space", f.roi_space,
                 "Space of --feedback-roi's centre: template (MNI; the default with --t1/--template/--normalization) "
                 "or epi (the EPI's world coordinates; the default otherwise)")
      ->check(CLI::IsMember({"template", "epi"}));
  cmd.add_option("--baseline", v.baseline_condition, "Baseline condition of the events (default: rest)");
  cmd.add_option("--results-pub", v.results_pub, "ZeroMQ PUB endpoint of the per-TR results ('' off)")
      ->capture_default_str();
  cmd.add_option("--feedback-tcp", v.feedback_tcp, "HOST:PORT of the feedback line server ('' off)")
      ->capture_default_str();
  cmd.add_option("--feedback-udp", v.feedback_udp, "HOST:PORT to send each feedback line to (repeatable)");
  cmd.add_flag("--no-outputs", f.no_outputs, "No PUB, TCP or UDP outputs");
}

stream::PipelineConfig pipeline_config_from(const PipelineFlags& f, const CLI::App& cmd) {
  stream::PipelineConfig c =
      f.config_file.empty() ? stream::PipelineConfig{} : stream::load_pipeline_config(f.config_file);
  const stream::PipelineConfig& o = f.values;
  auto given =
      [&](const char* flag) {  // flags a command does not register (e.g. replay has no --listen) count as not given
        const CLI::Option* option = cmd.get_option_no_throw(flag);
        return option != nullptr && option->count() > 0;
      };
  if (given("--listen")) c.listen = o.listen;
  if (given("--session-dir")) c.session_dir = o.session_dir;
  if (given("--session")) c.session = o.session;
  if (given("--fsync")) c.fsync = o.fsync;
  if (given("--ring")) c.ring = o.ring;
  if (given("--queue")) c.queue = o.queue;
  if (given("--max-open-runs")) c.max_open_runs = o.max_open_runs;
  if (given("--run-idle-close-s")) c.run_idle_close_s = o.run_idle_close_s;
  if (given("--max-volumes")) c.max_volumes = o.max_volumes;
  if (given("--exit-after-runs")) c.exit_after_runs = o.exit_after_runs;
  if (given("--max-live-runs")) c.max_live_runs = o.max_live_runs;
  if (given("--live-run-idle-s")) c.live_run_idle_s = o.live_run_idle_s;
  if (given("--tr")) c.tr_s = o.tr_s;
  if (given("--volumes")) c.volumes = o.volumes;
  if (given("--events")) c.events = o.events;
  if (given("--warm")) c.warm = o.warm;
  if (given("--motion-ref")) c.motion_reference = o.motion_reference;
  if (f.no_motion) c.motion = false;
  if (f.no_qa) c.qa = false;
  if (given("--qa-mask")) c.qa_mask = o.qa_mask;
  if (given("--decoder-model")) c.decoder_model = o.decoder_model;
  if (given("--decoder-feedback")) c.decoder_feedback = o.decoder_feedback;
  if (given("--decoder-target")) c.decoder_target = o.decoder_target;
  if (given("--decoder-average")) c.decoder_average_volumes = o.decoder_average_volumes;
  if (given("--qa-fd-filter")) c.qa_options.fd_filter.kind = parse_fd_filter(f.qa_fd_filter);
  if (given("--fwhm")) c.smoothing_fwhm_mm = o.smoothing_fwhm_mm;
  if (given("--contrast")) c.contrasts = o.contrasts;
  if (given("--glm-window")) c.glm_window = o.glm_window;
  if (given("--cca-window")) c.cca_window = o.cca_window;
  if (given("--atlas")) c.atlas = o.atlas;
  if (given("--atlas-transform")) c.atlas_transform = o.atlas_transform;
  if (given("--t1")) c.t1 = o.t1;
  if (given("--template")) c.template_name = o.template_name;
  if (given("--normalization")) c.normalization = o.normalization;
  if (f.no_warp) c.normalization_warp = false;
  if (given("--feedback-roi")) {
    double x = 0, y = 0, z = 0, r = 8;
    if (std::sscanf(f.feedback_roi.c_str(), "%lf,%lf,%lf,%lf", &x, &y, &z, &r) < 3) {
      throw std::invalid_argument("--feedback-roi '" + f.feedback_roi + "': expected x,y,z[,radius] in mm");
    }
    stream::RoiSpec roi;
    roi.name = "roi";
    roi.sphere_mm = std::array<double, 3>{x, y, z};
    roi.radius_mm = r;
    if (f.roi_space == "template") roi.space = stream::RoiSpace::kTemplate;
    if (f.roi_space == "epi") roi.space = stream::RoiSpace::kEpi;
    c.feedback_rois = {roi};
  }
  if (given("--baseline")) c.baseline_condition = o.baseline_condition;
  if (given("--results-pub")) c.results_pub = o.results_pub;
  if (given("--feedback-tcp")) c.feedback_tcp = o.feedback_tcp;
  if (given("--feedback-udp")) c.feedback_udp = o.feedback_udp;
  if (f.no_outputs) {
    c.results_pub.clear();
    c.feedback_tcp.clear();
    c.feedback_udp.clear();
  }
  // Windows longer than the ring cannot be computed: shorten them to the ring, and say so.
  for (auto [name, window] : {std::pair<const char*, int64_t*>{"GLM", &c.glm_window},
                              {"CCA", &c.cca_window},
                              {"connectivity", &c.connectivity_window}}) {
    if (*window > c.ring) {
      spdlog::warn("{} window {} is longer than the ring ({}): using {}", name, *window, c.ring, c.ring);
      *window = c.ring;
    }
  }
  if (c.data_dir.empty()) {
    try {
      c.data_dir = find_installed_data("mricron/aal.nii.gz", executable_dir()).parent_path().parent_path();
    } catch (const std::exception&) {
      if (c.atlas == "aal") {
        spdlog::warn("the AAL atlas is not installed (scripts/fetch-data.sh): ROI x ROI connectivity off");
        c.atlas.clear();
      }
    }
  }
  return c;
}

}  // namespace rtf::cli

// ---- The command reference ----
namespace rtf::cli {
namespace {

constexpr const char* kProgram = "rtfmri";

// Text in a table cell: pipes escaped, line breaks as <br>.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += "<br>";
    } else {
      out += c;
    }
  }
  return out;
}

std::string code(const std::string& text) {
  return text.empty() ? std::string() : "`" + cell(text) + "`";
}

// "rtfmri sim phantom" for the subcommand `phantom` of `sim` (the program's name, not argv[0]'s path, for the root).
std::string full_name(const CLI::App& app) {
  const CLI::App* parent = app.get_parent();
  return parent == nullptr ? std::string(kProgram) : full_name(*parent) + " " + app.get_name();
}

// GitHub's anchor of a heading: lower case, spaces to hyphens.
std::string anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) out += c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The options --help lists (not hidden, not --help itself), positionals or named ones.
std::vector<const CLI::Option*> listed_options(const CLI::App& app, bool positional) {
  return app.get_options([&app, positional](const CLI::Option* o) {
    return !o->get_group().empty() && o != app.get_help_ptr() && o != app.get_help_all_ptr() &&
           o->nonpositional() != positional;
  });
}

std::vector<const CLI::App*> subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

bool repeatable(const CLI::Option& o) {
  return o.get_expected_max() == CLI::detail::expected_max_vector_size;
}

std::string names_of(const std::set<CLI::Option*>& options) {
  std::vector<std::string> names;
  for (const CLI::Option* o : options) names.push_back(o->get_name());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + code(n);
  return out;
}

// The help text with what else --help says about the option: required, repeatable, environment, exclusions.
std::string description(const CLI::Option& o) {
  std::string text = cell(o.get_description());
  // Each note a sentence of its own after the help text.
  const auto add = [&text](const std::string& note) {
    if (!text.empty() && std::string(".!?:").find(text.back()) == std::string::npos) text += '.';
    text += (text.empty() ? "" : " ") + note;
  };
  if (o.get_required()) add("**Required.**");
  if (repeatable(o) && o.nonpositional()) add("Repeatable.");
  if (!o.get_envname().empty()) add(fmt::format("Environment: {}.", code(o.get_envname())));
  if (!o.get_needs().empty()) add(fmt::format("Needs {}.", names_of(o.get_needs())));
  if (!o.get_excludes().empty()) add(fmt::format("Excludes {}.", names_of(o.get_excludes())));
  return text;
}

std::string option_names(const CLI::Option& o) {
  std::string out;
  for (const std::string& l : o.get_lnames()) out += (out.empty() ? "" : ", ") + code("--" + l);
  for (const std::string& s : o.get_snames()) out += (out.empty() ? "" : ", ") + code("-" + s);
  return out;
}

void options_table(std::string& out, const std::vector<const CLI::Option*>& options) {
  out += "| option | value | default | description |\n| --- | --- | --- | --- |\n";
  for (const CLI::Option* o : options) {
    const std::string value = o->get_type_name().empty() ? std::string("flag") : code(o->get_type_name());
    out += fmt::format("| {} | {} | {} | {} |\n", option_names(*o), value, code(o->get_default_str()), description(*o));
  }
  out += "\n";
}

void arguments_table(std::string& out, const std::vector<const CLI::Option*>& positionals) {
  out += "| argument | value | description |\n| --- | --- | --- |\n";
  for (const CLI::Option* o : positionals) {
    const std::string value = code(o->get_type_name()) + (repeatable(*o) ? " ..." : "");
    out += fmt::format("| {} | {} | {} |\n", code(o->get_name(true)), value, description(*o));
  }
  out += "\n";
}

std::string usage(const CLI::App& app) {
  std::string line = full_name(app);
  if (!listed_options(app, false).empty()) line += " [OPTIONS]";
  for (const CLI::Option* o : listed_options(app, true)) {
    const std::string name = o->get_name(true) + (repeatable(*o) ? "..." : "");
    line += " " + (o->get_required() ? name : "[" + name + "]");
  }
  if (!subcommands(app).empty()) line += " SUBCOMMAND";
  return line;
}

void contents(std::string& out, const CLI::App& app, int depth) {
  for (const CLI::App* sub : subcommands(app)) {
    const std::string name = full_name(*sub);
    out += fmt::format("{}- [{}](#{})\n", std::string(static_cast<size_t>(2 * depth), ' '), name, anchor(name));
    contents(out, *sub, depth + 1);
  }
}

void command_section(std::string& out, const CLI::App& app) {
  const std::string name = full_name(app);
  out += fmt::format("## {}\n\n{}\n\n", name, app.get_description());
  if (!app.get_footer().empty()) out += app.get_footer() + "\n\n";
  out += fmt::format("```\n{}\n```\n\n", usage(app));
  const auto positionals = listed_options(app, true);
  if (!positionals.empty()) arguments_table(out, positionals);
  const auto options = listed_options(app, false);
  if (!options.empty()) options_table(out, options);
  if (!subcommands(app).empty()) {
    out += "Subcommands:\n\n";
    for (const CLI::App* sub : subcommands(app)) {
      out += fmt::format("- [{}](#{}): {}\n", full_name(*sub), anchor(full_name(*sub)), sub->get_description());
    }
    out += "\n";
  }
  for (const CLI::App* sub : subcommands(app)) command_section(out, *sub);
}

}  // namespace

std::string cli_reference_markdown(const CLI::App& app) {
  std::string out = fmt::format(
      "# {} command reference\n\n"
      "<!-- Generated by `{} help --markdown` from the options each command declares: do not edit by hand. "
      "scripts/check_cli_docs.sh fails CI when this file differs from the binary's output. -->\n\n"
      "{}\n\n",
      kProgram, kProgram, app.get_description());
  out +=
      fmt::format("Global options go before the subcommand: `{} [GLOBAL OPTIONS] SUBCOMMAND [OPTIONS]`.\n\n", kProgram);
  options_table(out, listed_options(app, false));
  out += "## Subcommands\n\n";
  contents(out, app, 0);
  out += "\n";
  for (const CLI::App* sub : subcommands(app)) command_section(out, *sub);
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace rtf::cli
