// Runs dcm2niix through the shell on a copy of the input; compares voxel for voxel.
#include "tests/support/dcm2niix.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/nifti_io.hpp"

namespace rtf::test {

namespace fs = std::filesystem;

bool have_dcm2niix() {
  return std::system("command -v dcm2niix >/dev/null 2>&1") == 0;
}

Image dcm2niix_of(const fs::path& folder, const fs::path& work, std::vector<double>* slice_timing) {
  const fs::path in = work / "dcm2niix_in", out = work / "dcm2niix_out";
  fs::create_directories(out);
  fs::copy(folder, in, fs::copy_options::recursive);
  const std::string command =
      "dcm2niix -z n -b y -f converted -o '" + out.string() + "' '" + in.string() + "' >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<fs::path> written;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".nii") written.push_back(entry.path());
  }
  EXPECT_EQ(written.size(), 1u) << "dcm2niix wrote " << written.size() << " NIfTI files from " << folder;
  if (written.size() != 1) return Image();
  if (slice_timing != nullptr) {
    slice_timing->clear();
    fs::path sidecar = written.front();
    sidecar.replace_extension(".json");
    std::ifstream sidecar_text(sidecar);
    const nlohmann::json bids = nlohmann::json::parse(sidecar_text, nullptr, false);
    if (!bids.is_discarded() && bids.contains("SliceTiming"))
      *slice_timing = bids["SliceTiming"].get<std::vector<double>>();
  }
  return read_nifti(written.front());
}

void expect_same_volume(const Image& mine, const Image& theirs, int64_t t, double affine_mm) {
  ASSERT_EQ(mine.header().dims, theirs.header().dims);
  ASSERT_LT(t, theirs.nt());
  const Image want = theirs.extract_volume(t);
  int64_t differ = 0;
  for (size_t i = 0; i < want.data().size(); ++i) differ += mine.data()[i] != want.data()[i] ? 1 : 0;
  EXPECT_EQ(differ, 0) << "volume " << t << ": voxels that differ from dcm2niix's";
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(mine.header().affine(r, c), theirs.header().affine(r, c), affine_mm) << "affine " << r << ", " << c;
    }
  }
}

}  // namespace rtf::test
