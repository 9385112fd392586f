// ctest-label: unit
// FolderWatcher (scanner/watch/folder_watcher.hpp), each case with inotify and with polling: a file written in flushed
// chunks is reported once, only after it is closed; temporary names are ignored until renamed; files present at start
// are reported (or not, when asked); a subfolder created after start is watched from its first file; 500 files written
// quickly are each reported once, in the order they were written; a rewritten file is reported again; retry_later()
// brings a file back when it grows or after a back-off, and gives up on one that never changes; deleted and
// renamed-away files are forgotten; stop() ends a wait in another thread; a vanished folder is a WatchError naming it.
// A real GE series folder written slice by slice is reported file by file, each whole (GDCM reads it; skipped without
// the extra data, RTF_EXTRA_DATA_DIR). Also: after an inotify event-queue overflow no file is lost; a missing folder is
// an error; auto picks inotify here.
//
// Files are written on the thread that calls next_ready(), which is where the watcher scans and reads events, so every
// outcome is fixed by the order of the calls, never by the machine's speed. "Nothing else was reported" is checked by
// writing a sentinel file afterwards and collecting until it is reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <string>
#include <vector>

#include "scanner/dicom/dicom_header.hpp"
#include "scanner/watch/folder_watcher.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::scanner {
namespace {

namespace fs = std::filesystem;
using Paths = std::vector<fs::path>;
using rtf::test::eventually;
using rtf::test::TempDir;

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

size_t count_of(const Paths& reports, const fs::path& file) {
  return static_cast<size_t>(std::count(reports.begin(), reports.end(), file));
}

Paths sorted(Paths paths) {
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Calls next_ready() and appends what it reports until `done()` holds; false if that never happens.
bool collect_until(FolderWatcher& watcher, Paths& reports, const std::function<bool()>& done) {
  return eventually([&] {
    const Paths ready = watcher.next_ready(0.02);
    reports.insert(reports.end(), ready.begin(), ready.end());
    return done();
  });
}

Paths reports_of(FolderWatcher& watcher, const fs::path& file) {
  Paths reports;
  EXPECT_TRUE(collect_until(watcher, reports, [&] { return count_of(reports, file) > 0; })) << file << " never came";
  return reports;
}

// What else is reported until a file written now is: anything reported in error about earlier files.
Paths reports_until_sentinel(FolderWatcher& watcher, const fs::path& folder) {
  static int sentinels = 0;
  const fs::path sentinel = folder / ("zz_sentinel_" + std::to_string(++sentinels) + ".dat");
  write_file(sentinel, "sentinel");
  Paths reports = reports_of(watcher, sentinel);
  EXPECT_EQ(count_of(reports, sentinel), 1u);
  std::erase(reports, sentinel);
  return reports;
}

class FolderWatcherTest : public ::testing::TestWithParam<WatchMode> {
 protected:
  FolderWatcherTest() { fs::create_directory(dir_); }

  // Small intervals keep the polling cases quick; they decide no outcome.
  WatchOptions options() const {
    WatchOptions options;
    options.mode = GetParam();
    options.poll_interval_s = 0.01;
    options.settle_s = 0.05;
    return options;
  }

  TempDir tmp_{"rtf-watch"};
  const fs::path dir_ = tmp_ / "export";
};

TEST_P(FolderWatcherTest, UsesTheModeAskedFor) {
  FolderWatcher watcher(dir_, options());
  EXPECT_EQ(watcher.mode(), GetParam()) << watcher.mode_reason();
  EXPECT_EQ(watcher.dir(), dir_);
}

TEST_P(FolderWatcherTest, ChunkedWriteIsReportedOnceAfterItIsComplete) {
  FolderWatcher watcher(dir_, options());
  EXPECT_TRUE(watcher.next_ready(0).empty());
  const fs::path file = dir_ / "vol_0001.dcm";
  std::ofstream out(file, std::ios::binary);
  size_t written = 0;
  for (int chunk = 0; chunk < 6; ++chunk) {
    const std::string bytes(1000 + chunk, static_cast<char>('a' + chunk));
    out << bytes;
    out.flush();
    written += bytes.size();
    ASSERT_EQ(fs::file_size(file), written);
    EXPECT_TRUE(watcher.next_ready(0).empty()) << "reported after chunk " << chunk + 1 << " of 6";
  }
  out.close();
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, TemporaryNamesAreIgnoredUntilRenamed) {
  FolderWatcher watcher(dir_, options());
  for (const char* name :
       {".vol_1.dcm", "vol_1.dcm.tmp", "vol_2.dcm.part", "vol_3.partial", "vol_4.dcm~", "VOL_5.TMP"}) {
    write_file(dir_ / name, "complete content under a temporary name");
  }
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});

  fs::rename(dir_ / "vol_2.dcm.part", dir_ / "vol_2.dcm");
  EXPECT_EQ(reports_of(watcher, dir_ / "vol_2.dcm"), Paths{dir_ / "vol_2.dcm"});
  write_file(tmp_ / "written_elsewhere.dcm", "moved in whole");
  fs::rename(tmp_ / "written_elsewhere.dcm", dir_ / "vol_6.dcm");
  EXPECT_EQ(reports_of(watcher, dir_ / "vol_6.dcm"), Paths{dir_ / "vol_6.dcm"});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, FilesPresentAtStartAreReportedOnce) {
  const Paths present{dir_ / "vol_1.dcm", dir_ / "vol_2.dcm", dir_ / "vol_3.dcm"};
  for (const auto& file : present) write_file(file, "written before the watcher started " + file.string());
  FolderWatcher watcher(dir_, options());
  Paths reports;
  ASSERT_TRUE(collect_until(watcher, reports, [&] { return reports.size() >= present.size(); }));
  EXPECT_EQ(reports, present);
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, FilesPresentAtStartCanBeLeftOut) {
  write_file(dir_ / "old.dcm", "from an earlier run");
  WatchOptions only_new = options();
  only_new.include_existing = false;
  FolderWatcher watcher(dir_, only_new);
  write_file(dir_ / "new.dcm", "from this run");
  EXPECT_EQ(reports_of(watcher, dir_ / "new.dcm"), Paths{dir_ / "new.dcm"});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, SubfolderCreatedAfterStartIsWatchedFromItsFirstFile) {
  WatchOptions recursive = options();
  recursive.recursive = true;
  FolderWatcher watcher(dir_, recursive);
  EXPECT_TRUE(watcher.next_ready(0).empty());

  // A series folder (and one inside it) appears with files already in it before the watcher looks: with inotify,
  // they were written before the folder's watch existed.
  const fs::path series = dir_ / "s0001", echo = series / "echo_2";
  fs::create_directories(echo);
  const Paths first{series / "i0001.dcm", echo / "i0001.dcm"};
  for (const auto& file : first) write_file(file, "first file of " + file.parent_path().string());
  fs::create_directories(dir_ / ".staging");
  write_file(dir_ / ".staging" / "hidden.dcm", "in a hidden folder");
  Paths reports;
  ASSERT_TRUE(collect_until(watcher, reports, [&] { return reports.size() >= first.size(); }));
  EXPECT_EQ(sorted(reports), sorted(first));

  // Files written once the folder is watched.
  write_file(series / "i0002.dcm", "second file");
  EXPECT_EQ(reports_of(watcher, series / "i0002.dcm"), Paths{series / "i0002.dcm"});
  EXPECT_EQ(reports_until_sentinel(watcher, series), Paths{});
}

TEST_P(FolderWatcherTest, SubfoldersAreIgnoredUnlessRecursive) {
  FolderWatcher watcher(dir_, options());
  fs::create_directories(dir_ / "s0001");
  write_file(dir_ / "s0001" / "i0001.dcm", "in a subfolder");
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, ManyFilesWrittenQuicklyAreReportedOnceInOrder) {
  FolderWatcher watcher(dir_, options());
  Paths written, reports;
  for (int i = 0; i < 500; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "vol_%04d.dcm", i);
    written.push_back(dir_ / name);
    write_file(written.back(), "volume " + std::to_string(i));
    if (i % 25 == 24) {
      const Paths ready = watcher.next_ready(0);
      reports.insert(reports.end(), ready.begin(), ready.end());
    }
  }
  ASSERT_TRUE(collect_until(watcher, reports, [&] { return reports.size() >= written.size(); }))
      << reports.size() << " of " << written.size() << " reported";
  EXPECT_EQ(reports, written);
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, FileRewrittenAfterReportIsReportedAgain) {
  FolderWatcher watcher(dir_, options());
  const fs::path file = dir_ / "vol_1.dcm";
  write_file(file, "first version");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  write_file(file, "second version, written in place");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, RetriedFileIsReportedAgainWhenItGrows) {
  WatchOptions patient = options();
  patient.retry_backoff_s = 3600;  // only growth can bring it back within the test
  patient.give_up_s = 3600;
  FolderWatcher watcher(dir_, patient);
  const fs::path file = dir_ / "vol_1.dcm";
  write_file(file, "header only");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});

  watcher.retry_later(file);
  EXPECT_TRUE(watcher.next_ready(0).empty());
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out << ", then the pixel data";
  }
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
  EXPECT_EQ(watcher.given_up(), Paths{});
}

TEST_P(FolderWatcherTest, RetriedFileIsReportedAgainAfterBackOff) {
  WatchOptions backoff = options();
  backoff.retry_backoff_s = 0.05;
  backoff.give_up_s = 3600;
  FolderWatcher watcher(dir_, backoff);
  const fs::path file = dir_ / "vol_1.dcm";
  write_file(file, "looks truncated to the parser");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  watcher.retry_later(file);
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});  // accepted this time: not reported again
}

TEST_P(FolderWatcherTest, RetriedFileThatNeverChangesIsGivenUp) {
  WatchOptions impatient = options();
  impatient.retry_backoff_s = 0.01;
  impatient.give_up_s = 0.2;
  FolderWatcher watcher(dir_, impatient);
  const fs::path file = dir_ / "vol_1.dcm";
  write_file(file, "never completed");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});

  watcher.retry_later(file);
  int reported_again = 0;
  ASSERT_TRUE(eventually([&] {
    for (const auto& ready : watcher.next_ready(0.02)) {
      EXPECT_EQ(ready, file);
      ++reported_again;
      watcher.retry_later(ready);  // the parser still finds it incomplete
    }
    return !watcher.given_up().empty();
  }));
  EXPECT_EQ(watcher.given_up(), Paths{file}) << "after " << reported_again << " back-off reports";
  EXPECT_TRUE(watcher.next_ready(0.05).empty());  // returns on timeout: the skipped file holds nothing up
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, DeletedFilesAreForgotten) {
  FolderWatcher watcher(dir_, options());
  write_file(dir_ / "short_lived.dcm", "deleted before anyone looked");
  fs::remove(dir_ / "short_lived.dcm");
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});

  const fs::path file = dir_ / "vol_1.dcm";
  write_file(file, "first");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  fs::remove(file);
  EXPECT_TRUE(watcher.next_ready(0.05).empty());  // longer than a poll interval: a scan sees it gone
  write_file(file, "a new file under the old name");
  EXPECT_EQ(reports_of(watcher, file), Paths{file});

  // Renamed away and back, unchanged: forgotten in between, so it counts as new when it returns.
  fs::rename(file, tmp_ / "away.dcm");
  EXPECT_TRUE(watcher.next_ready(0.05).empty());
  fs::rename(tmp_ / "away.dcm", file);
  EXPECT_EQ(reports_of(watcher, file), Paths{file});
  EXPECT_EQ(reports_until_sentinel(watcher, dir_), Paths{});
}

TEST_P(FolderWatcherTest, StopFromAnotherThreadEndsAWait) {
  FolderWatcher watcher(dir_, options());
  auto waiting = std::async(std::launch::async, [&] { return watcher.next_ready(3600); });
  watcher.stop();
  ASSERT_EQ(waiting.wait_for(rtf::test::kPatience), std::future_status::ready);
  EXPECT_EQ(waiting.get(), Paths{});
  write_file(dir_ / "vol_1.dcm", "after stop");
  EXPECT_EQ(watcher.next_ready(0.05), Paths{});
}

TEST_P(FolderWatcherTest, VanishedFolderIsAnErrorNamingIt) {
  FolderWatcher watcher(dir_, options());
  write_file(dir_ / "vol_1.dcm", "content");
  fs::remove_all(dir_);
  std::string message;
  ASSERT_TRUE(eventually([&] {
    try {
      watcher.next_ready(0.02);
    } catch (const WatchError& e) {
      message = e.what();
      return true;
    }
    return false;
  }));
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("disappeared"), std::string::npos) << message;
  EXPECT_THROW(watcher.next_ready(0), WatchError);
}

// Real GE export (the extra data): its series folder appears after start and each slice file (names like
// "i2862284.MRDC.5") is written in two flushed halves; every file is reported once, and only whole: GDCM reads each.
TEST_P(FolderWatcherTest, RealGeSeriesFolderIsReportedFileByFileAndWhole) {
  const fs::path source = rtf::test::extra_data_dir() / "scanner/pyneal_GE/funcData/s1925";
  if (!fs::is_directory(source)) GTEST_SKIP() << rtf::test::missing_extra_data("scanner/pyneal_GE/funcData/s1925");
  Paths slices;
  for (const auto& entry : fs::directory_iterator(source)) slices.push_back(entry.path());
  std::sort(slices.begin(), slices.end());
  ASSERT_GT(slices.size(), 10u);

  WatchOptions recursive = options();
  recursive.recursive = true;
  FolderWatcher watcher(dir_, recursive);
  const fs::path series = dir_ / "s1925";
  fs::create_directory(series);
  Paths written, reports;
  for (const auto& slice : slices) {
    std::ifstream in(slice, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    written.push_back(series / slice.filename());
    std::ofstream out(written.back(), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2)).flush();
    for (const auto& ready : watcher.next_ready(0)) {
      EXPECT_NE(ready, written.back()) << "reported half written";
      reports.push_back(ready);
    }
    out.write(bytes.data() + bytes.size() / 2, static_cast<std::streamsize>(bytes.size() - bytes.size() / 2));
  }
  ASSERT_TRUE(collect_until(watcher, reports, [&] { return reports.size() >= written.size(); }));
  EXPECT_EQ(sorted(reports), sorted(written));
  for (const auto& file : reports) {
    EXPECT_NO_THROW(rtf::dicom::read_dicom_header(file)) << file;
    EXPECT_EQ(fs::file_size(file), fs::file_size(source / file.filename())) << file;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FolderWatcherTest, ::testing::Values(WatchMode::kInotify, WatchMode::kPoll),
                         [](const auto& mode_info) {
                           return mode_info.param == WatchMode::kInotify ? "inotify" : "poll";
                         });

// More events than the kernel queues (fs.inotify.max_queued_events) arrive before the watcher reads them: after the
// overflow it lists the folder again, and every file is still reported exactly once.
TEST(FolderWatcher, InotifyQueueOverflowLosesNoFile) {
  long max_queued = 0;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> max_queued;
  if (max_queued <= 0 || max_queued > 100000) GTEST_SKIP() << "max_queued_events " << max_queued << ": too many files";
  TempDir tmp{"rtf-watch"};
  WatchOptions options;
  options.mode = WatchMode::kInotify;
  options.poll_interval_s = 0.01;
  options.settle_s = 0.05;
  FolderWatcher watcher(tmp.path(), options);
  Paths written;
  for (long i = 0; i < max_queued / 2 + 100; ++i) {  // two events per file: IN_CREATE, IN_CLOSE_WRITE
    written.push_back(tmp / ("vol_" + std::to_string(100000 + i) + ".dcm"));
    write_file(written.back(), "v");
  }
  Paths reports;
  ASSERT_TRUE(collect_until(watcher, reports, [&] { return reports.size() >= written.size(); }));
  EXPECT_EQ(sorted(reports), sorted(written));
  EXPECT_EQ(reports_until_sentinel(watcher, tmp.path()), Paths{});
}

TEST(FolderWatcher, MissingFolderIsAnErrorNamingIt) {
  TempDir tmp{"rtf-watch"};
  try {
    FolderWatcher watcher(tmp / "no_such_folder", {});
    FAIL() << "no error";
  } catch (const WatchError& e) {
    EXPECT_NE(std::string(e.what()).find((tmp / "no_such_folder").string()), std::string::npos) << e.what();
  }
  write_file(tmp / "a_file", "not a folder");
  EXPECT_THROW(FolderWatcher(tmp / "a_file", {}), WatchError);
}

TEST(FolderWatcher, AutomaticModeUsesInotifyOnALocalFolder) {
  TempDir tmp{"rtf-watch"};
  const auto network = network_filesystem_name(tmp.path());
  FolderWatcher watcher(tmp.path(), {});
  EXPECT_EQ(watcher.mode(), network ? WatchMode::kPoll : WatchMode::kInotify) << watcher.mode_reason();
  EXPECT_EQ(network_filesystem_name("/proc"), std::nullopt);  // procfs is local
}

}  // namespace
}  // namespace rtf::scanner
