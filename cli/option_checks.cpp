// The numeric option checks of option_checks.hpp, and the pass that adds the finite check to every float option.
#include "cli/option_checks.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <optional>

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
