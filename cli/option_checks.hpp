// Checks of numeric options with messages a user can read (issue 35). CLI11's PositiveNumber and NonNegativeNumber
// answer "Value 0 not in range 0.000000 to 1797...", a 309-digit DBL_MAX, and CLI11's ranges let "nan" through
// (a NaN compares false with both bounds): a NaN threshold then silently meant "not asked for". These say what the
// option needs and what it got, and refuse nan and inf:
//   --fwhm: must be a number > 0 (got 0)
//   -c: must be a finite number (got nan)
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rtf::cli {

// A finite number > 0; `what` names it in the message ("a cluster-forming threshold must be > 0 (got 0)").
CLI::Validator positive(const std::string& what = "");
CLI::Validator non_negative();  // a finite number >= 0
// A finite number >= `least`, described as `what` ("the number of permutations must be at least 1 (got 0)").
CLI::Validator at_least(double least, const std::string& what);

// Adds a check refusing nan and inf (and text that is not a number) to every floating-point option of `app` and its
// subcommands, at any depth; call it once all of them are declared. No option of rtfmri means anything by nan or inf.
void refuse_non_finite_numbers(CLI::App& app);

}  // namespace rtf::cli
