// ctest-label: unit
// RowFile and OutputFailures, the live server's checked row writer and its record of lost outputs: rows written to
// /dev/full are counted as lost with the path and the errno text; a row cut short (RLIMIT_FSIZE) is cut back off the
// file and writing resumes when it can; the log says when writing starts failing, counts at 10, 100..., and says when
// it writes again (a few lines for any number of lost rows); a file that cannot be opened is retried; a header is
// written first; write_output records a file that was not written and never throws.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "stream/output/output_failures.hpp"
#include "stream/output/row_file.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kNoSpace = std::strerror(ENOSPC);

TEST(RowFile, RowsToAFullDiskAreCountedAsLostWithThePathAndTheErrno) {
  OutputFailures failures;
  test::LogCapture log;
  {
    RowFile file("/dev/full", RowFile::Mode::kAppend, "", &failures);
    for (int i = 0; i < 25; ++i) EXPECT_FALSE(file.append("{\"index\":" + std::to_string(i) + "}\n"));
    EXPECT_EQ(file.written(), 0);
    EXPECT_EQ(file.lost(), 25);
    EXPECT_NE(file.first_error().find("/dev/full"), std::string::npos) << file.first_error();
    EXPECT_NE(file.first_error().find(kNoSpace), std::string::npos) << file.first_error();
  }
  const std::vector<LostOutput> lost = failures.lost();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].path, "/dev/full");
  EXPECT_EQ(lost[0].rows_lost, 25);
  EXPECT_FALSE(lost[0].file_lost);  // /dev/full cannot be synced: not an error
  EXPECT_NE(lost[0].error.find(kNoSpace), std::string::npos) << lost[0].error;
  const std::vector<std::string> lines = failures.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("/dev/full: 25 rows not written ("), std::string::npos) << lines[0];
  // Rate-limited: the first failure, the count at 10, the total at close; not 25 lines.
  const std::vector<std::string> logged = log.lines();
  ASSERT_EQ(logged.size(), 3u) << ::testing::PrintToString(logged);
  EXPECT_NE(logged[0].find("error: cannot write /dev/full: " + kNoSpace), std::string::npos) << logged[0];
  EXPECT_NE(logged[1].find("10 rows lost so far"), std::string::npos) << logged[1];
  EXPECT_NE(logged[2].find("25 of 25 rows not written"), std::string::npos) << logged[2];
}

TEST(RowFile, ARowCutShortIsCutBackAndWritingResumes) {
  test::TempDir tmp("rtf-rowfile");
  const std::filesystem::path path = tmp / "latency.jsonl";
  OutputFailures failures;
  test::LogCapture log;
  RowFile file(path, RowFile::Mode::kAppend, "head\n", &failures);
  const std::string row(100, 'x');
  ASSERT_TRUE(file.append(row + "1\n"));
  ASSERT_TRUE(file.append(row + "2\n"));
  const auto good = std::filesystem::file_size(path);
  ASSERT_EQ(good, 5u + 2 * 102);
  // Room for half a row: the write is cut short (EFBIG), and the half row is taken off again.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = static_cast<rlim_t>(good + 50);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool third = file.append(row + "3\n");
  const bool fourth = file.append(row + "4\n");
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_FALSE(third);
  EXPECT_FALSE(fourth);
  EXPECT_EQ(std::filesystem::file_size(path), good);
  EXPECT_TRUE(file.append(row + "5\n"));
  EXPECT_EQ(file.close(), "");
  EXPECT_EQ(read_all(path), "head\n" + row + "1\n" + row + "2\n" + row + "5\n");
  EXPECT_EQ(file.written(), 3);
  EXPECT_EQ(file.lost(), 2);
  EXPECT_NE(file.first_error().find(path.string()), std::string::npos) << file.first_error();
  EXPECT_NE(file.first_error().find(std::strerror(EFBIG)), std::string::npos) << file.first_error();
  ASSERT_EQ(failures.lost().size(), 1u);
  EXPECT_EQ(failures.lost()[0].rows_lost, 2);
  // One line when it started failing, one when it wrote again, the total at close.
  const std::vector<std::string> logged = log.lines();
  ASSERT_EQ(logged.size(), 3u) << ::testing::PrintToString(logged);
  EXPECT_NE(logged[0].find("error: cannot write " + path.string()), std::string::npos) << logged[0];
  EXPECT_NE(logged[1].find("writing again after 2 lost rows"), std::string::npos) << logged[1];
  EXPECT_NE(logged[2].find("2 of 5 rows not written"), std::string::npos) << logged[2];
}

TEST(RowFile, AFileThatCannotBeOpenedIsTriedAgainAndGetsItsHeaderFirst) {
  test::TempDir tmp("rtf-rowfile");
  const std::filesystem::path dir = tmp / "runs" / "r1";
  OutputFailures failures;
  RowFile file(dir / "feedback.tsv", RowFile::Mode::kTruncate, "volume\tvalue\n", &failures);
  EXPECT_FALSE(file.append("0\t1.5\n"));
  EXPECT_NE(file.first_error().find("cannot open " + (dir / "feedback.tsv").string()), std::string::npos)
      << file.first_error();
  EXPECT_NE(file.first_error().find(std::strerror(ENOENT)), std::string::npos) << file.first_error();
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(file.append("1\t2.5\n"));
  EXPECT_EQ(file.close(), "");
  EXPECT_EQ(read_all(dir / "feedback.tsv"), "volume\tvalue\n1\t2.5\n");
  EXPECT_EQ(failures.lost(tmp.path()).size(), 1u);
  EXPECT_EQ(failures.lost(tmp.path() / "elsewhere").size(), 0u);  // lost(DIR): only what lies under DIR
}

TEST(RowFile, AppendModeContinuesAFileAndWritesNoSecondHeader) {
  test::TempDir tmp("rtf-rowfile");
  const std::filesystem::path path = tmp / "motion.tsv";
  for (int k = 0; k < 2; ++k) {
    RowFile file(path, RowFile::Mode::kAppend, "fd\tdvars\n", nullptr);
    EXPECT_TRUE(file.append(std::to_string(k) + "\n"));
  }
  EXPECT_EQ(read_all(path), "fd\tdvars\n0\n1\n");
}

TEST(OutputFailures, WriteOutputRecordsAFileNotWrittenAndNeverThrows) {
  OutputFailures failures;
  test::LogCapture log;
  bool ok = true;
  EXPECT_NO_THROW(ok = write_output(
                      "/x/cca.nii.gz", "run r1", [] { throw std::runtime_error("disk on fire"); }, failures));
  EXPECT_FALSE(ok);
  EXPECT_TRUE(write_output(
      "/x/ok.nii.gz", "run r1", [] {}, failures));
  const std::vector<std::string> lines = failures.lines("/x");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "/x/cca.nii.gz: not written (/x/cca.nii.gz: disk on fire)");
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_NE(log.lines()[0].find("error: run r1: not written: /x/cca.nii.gz: disk on fire"), std::string::npos);
}

}  // namespace
}  // namespace rtf::stream
