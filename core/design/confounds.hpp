// Confound regressors from a text file for the design (e.g. motion parameters): FSL's .par (six numbers per row, no
// header), rtfmri's own motion.tsv / _fd.tsv, or fMRIPrep's confounds tsv (a header row of names, 'n/a' allowed,
// counted as 0). One row per volume.
#pragma once

#include <Eigen/Core>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

struct ConfoundTable {
  std::vector<std::string> names;  // from the header, or confound_1.. without one
  Eigen::MatrixXd values;          // rows x names
};

// Whitespace- or tab-separated. A first line with any token that is not a number is the header. `columns`, if not
// empty, selects columns by name (in that order). Throws std::invalid_argument naming the source, line and column
// for rows of another width, tokens that are not numbers, unknown selected columns, or no rows.
ConfoundTable parse_confounds(std::string_view text, std::string_view source,
                              const std::vector<std::string>& columns = {});
ConfoundTable read_confounds(const std::filesystem::path& path, const std::vector<std::string>& columns = {});

}  // namespace rtf
