// ctest-label: unit
// Replays the NIfTI fuzzing corpus (tests/data/nifti_corpus: seeds and every crash the fuzzer found)
// through the same entry point as the libFuzzer target, so regressions show in ordinary test runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "fuzz/nifti_fuzz_entry.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/nifti_bytes.hpp"

namespace rtf {
namespace {

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(test::test_data_dir() / "nifti_corpus")) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(FuzzCorpusReplay, EveryInputCompletesAndSeedsLoad) {
  const std::vector<std::filesystem::path> files = corpus_files();
  ASSERT_GE(files.size(), 8u) << "corpus missing from " << (test::test_data_dir() / "nifti_corpus");
  uintmax_t total_bytes = 0;
  int loaded = 0;
  int rejected = 0;
  for (const auto& file : files) {
    const std::vector<uint8_t> bytes = test::read_bytes(file);
    total_bytes += bytes.size();
    const fuzz::FuzzOutcome outcome = fuzz::fuzz_nifti_outcome(bytes.data(), bytes.size());
    (outcome == fuzz::FuzzOutcome::kLoaded ? loaded : rejected)++;
    // Seeds named valid_* are well-formed files and must load; bad_* must be rejected.
    const std::string name = file.filename().string();
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_EQ(outcome, fuzz::FuzzOutcome::kLoaded) << name;
    }
    if (name.rfind("bad_", 0) == 0) {
      EXPECT_EQ(outcome, fuzz::FuzzOutcome::kRejected) << name;
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_LT(total_bytes, 20000u) << "keep the checked-in corpus small";
}

}  // namespace
}  // namespace rtf
