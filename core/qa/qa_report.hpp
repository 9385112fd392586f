// qa_report.html: one self-contained page for a run's data quality (docs/algorithms/qa.md): PNG plots embedded as
// data: URIs (the carpet plot, FD, DVARS, outlier fraction, global signal and quality index traces with their
// thresholds, a tSNR mosaic), a table of the run's image-quality metrics under MRIQC's names, the usable-data tally
// and the flagged slices. Written by `rtfmri qa` and at the end of every live or replayed run.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace rtf {

// One per-volume trace (NaN: undefined at that volume, e.g. FD of volume 0 or an outlier fraction before enough
// volumes); `threshold` NaN: none drawn.
struct QaTrace {
  std::string name;  // "FD (mm)", "DVARS", ...
  std::vector<double> values;
  double threshold = std::numeric_limits<double>::quiet_NaN();
};

struct QaUsableRow {
  double fd_threshold_mm = 0, minutes = 0, target_minutes = 0, minutes_to_target = 0;  // to_target inf: never
  int64_t frames = 0;
};

struct QaFlaggedSlice {
  int64_t volume = 0;
  int slice = 0;
  double z = 0;
};

struct QaReportInput {
  std::string title;  // the run or input file
  double tr_s = 0;    // 0: unknown (the x axes count volumes)
  int64_t volumes = 0;
  std::vector<QaTrace> traces;
  // Carpet (Power 2017): `carpet_rows` voxels x `volumes` columns, row-major (row r is one voxel's series, volume
  // fastest); rows already in display order (grey matter first when known). The page shows each row z-scored over
  // time. `carpet_split`: rows before it are grey matter (a line is drawn there; 0: no split known).
  std::vector<float> carpet;
  int64_t carpet_rows = 0, carpet_split = 0;
  // The tSNR map (x fastest) and the mask it is shown inside; dims of the grid. Empty: no mosaic.
  std::array<int64_t, 3> dims{0, 0, 0};
  std::vector<float> tsnr;
  std::vector<uint8_t> mask;
  // (name, value) in table order, MRIQC's names; NaN shown as "n/a".
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<QaUsableRow> usable;
  std::vector<QaFlaggedSlice> flagged;
  std::vector<std::pair<std::string, std::string>> notes;  // (label, text): input, mask, device, what is windowed...
};

// The page as one string (UTF-8 HTML, no script, no external resource; every string of the input escaped). Throws
// std::invalid_argument when the carpet is not carpet_rows x volumes, carpet_split is beyond carpet_rows, or a
// non-empty tsnr (or mask) does not have dims' product of values.
std::string qa_report_html(const QaReportInput& input);

}  // namespace rtf
