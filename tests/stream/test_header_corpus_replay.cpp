// ctest-label: unit
// Replays the protocol-header fuzzing corpus (tests/data/header_corpus: seeds and every input the fuzzer found
// interesting enough to keep) through the fuzz target's checks, so regressions show in ordinary test runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "fuzz/header_fuzz_entry.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/nifti_bytes.hpp"

namespace rtf {
namespace {

TEST(HeaderCorpusReplay, EveryInputKeepsTheParserInvariants) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(test::test_data_dir() / "header_corpus")) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u);
  int accepted = 0;
  for (const auto& file : files) {
    const std::vector<uint8_t> bytes = test::read_bytes(file);
    fuzz::HeaderOutcome outcome{};
    EXPECT_EQ(fuzz::check_header_input(bytes.data(), bytes.size(), outcome), "") << file.filename();
    const std::string name = file.filename().string();
    // valid_* seeds parse as a sender message; bad_* are rejected.
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_NE(outcome, fuzz::HeaderOutcome::kRejected) << name;
      ++accepted;
    }
    if (name.rfind("bad_", 0) == 0) {
      EXPECT_EQ(outcome, fuzz::HeaderOutcome::kRejected) << name;
    }
  }
  EXPECT_GE(accepted, 3);
}

}  // namespace
}  // namespace rtf
