// The Markdown command reference (cli/cli_reference.hpp).
#include "cli/cli_reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

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
