// Contrasts by name over a design's columns: "faces", "faces-houses", "2*faces - houses - cars",
// "0.5*faces + 0.5*houses", and F contrasts as several such rows ("faces; houses"). Unknown names are errors
// that name the unknown condition and list the known ones. See docs/algorithms/design.md.
#pragma once

#include <Eigen/Core>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

// Grammar (spaces anywhere between tokens):
//   expression := term { ('+' | '-') term }
//   term       := [ '+' | '-' ] [ number [ '*' ] ] column-name
// A column name is matched as the longest known name at that position that ends at the end of the text, at a
// space, or before '+', '-', '*' or ';' (so names may contain '-', e.g. "face-happy"; write "a - b" when both
// "a-b" and "a" are columns). Numbers are decimal with optional exponent. Repeated names add up. Returns one
// weight per column. Throws std::invalid_argument naming the expression and the problem (unknown name,
// missing term, stray text, all weights zero).
Eigen::VectorXd parse_contrast(std::string_view expression, const std::vector<std::string>& column_names);

// Rows separated by ';': "faces; houses" is the 2 x columns F contrast testing both. Each row follows
// parse_contrast; empty rows are errors.
Eigen::MatrixXd parse_f_contrast(std::string_view rows, const std::vector<std::string>& column_names);

struct NamedContrast {
  std::string name;
  Eigen::MatrixXd weights;  // one row for a t contrast, several for an F contrast
};

// "NAME=EXPRESSION" (as `--contrast NAME=EXPR` on a command line) or a bare expression, whose name is then the
// expression without spaces. A ';' makes it an F contrast.
NamedContrast parse_named_contrast(std::string_view spec, const std::vector<std::string>& column_names);

}  // namespace rtf
