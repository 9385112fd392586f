// FSL VEST text matrices for `rtfmri randomise`: design.mat, design.con, design.fts and design.grp as FSL's Glm GUI
// and FEAT write them (a /Key header, then /Matrix and rows of numbers), or a plain whitespace-separated matrix with no
// header, as randomise accepts for text matrices.
#pragma once

#include <Eigen/Core>
#include <filesystem>
#include <string>
#include <vector>

namespace rtf {

struct VestMatrix {
  Eigen::MatrixXd values;          // NumPoints (or NumContrasts) rows x NumWaves columns
  std::vector<std::string> names;  // names[K-1] from /ContrastNameK when present (else empty); for .con files
  std::vector<double> ppheights;   // /PPheights if present (else empty)
};

// Reads an FSL VEST file. Header keys: /NumWaves, /NumPoints, /NumContrasts, /PPheights, /RequiredEffect,
// /ContrastNameK (tabs or spaces after the key; other /Keys are ignored, as FSL does), then /Matrix and one row of
// numbers per line. A file whose first non-blank line does not start with '/' is read as a plain matrix. Blank lines,
// trailing whitespace and CRLF line endings are accepted. Throws std::runtime_error "<file>: line <n>: <problem>" for a
// missing /Matrix, a token that is not a number, a row of the wrong width, a row count or width that disagrees with
// the header, a non-finite value, an empty matrix, or a file that cannot be opened.
VestMatrix read_vest(const std::filesystem::path& path);

// Exchangeability blocks (design.grp): one integer per row (NumWaves 1). Throws as read_vest, and for a value that is
// not an integer or a row of more than one value.
std::vector<int> read_vest_groups(const std::filesystem::path& path);

// Writes a VEST file: /NumWaves, /NumPoints (or /NumContrasts when `contrasts`), /ContrastNameK lines when names are
// given, /PPheights when given, /Matrix, then rows of %.6e values separated by spaces. Writes to a temporary name and
// renames it into place. Throws std::runtime_error for an empty or non-finite matrix or a file that cannot be written.
void write_vest(const std::filesystem::path& path, const VestMatrix& m, bool contrasts = false);

}  // namespace rtf
