// ctest-label: unit
// io::OutputSet (core/io/output_set.hpp): files written under temporary names appear under their final names only at
// commit(), all together; a failure part way (the file size limit, as a full disk) leaves none of them and no
// temporary, and an older file of the same name as it was; SIGTERM while writing removes the temporaries, and SIGTERM
// in the middle of commit()'s renames is held until every file is renamed (children made by fork, so that the signal
// ends them and not the test).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/io/atomic_file.hpp"
#include "core/io/output_set.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::io {
namespace {

namespace fs = std::filesystem;

std::string text_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every name under `dir`, relative to it, hidden ones included.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(fs::relative(e.path(), dir).string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs `child` in a forked process; returns its wait status.
template <typename F>
int in_child(F&& child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      child();
    } catch (...) {
      ::_exit(99);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(OutputSet, FilesAppearOnlyAtCommitAllTogether) {
  const test::TempDir dir;
  fs::create_directory(dir / "sub");
  OutputSet set;
  const std::vector<fs::path> finals{dir / "a.json", dir / "b.nii.gz", dir / "sub" / "c.txt"};
  for (const fs::path& f : finals) {
    const fs::path temp = set.add(f);
    EXPECT_EQ(temp.filename(), f.filename());  // the writers see the real extension
    EXPECT_NE(temp.parent_path(), f.parent_path());
    write_text_atomically(temp, f.filename().string());
  }
  EXPECT_EQ(set.add(finals[0]), set.add(finals[0]));
  for (const fs::path& f : finals) EXPECT_FALSE(fs::exists(f)) << f << " before commit";
  set.commit();
  for (const fs::path& f : finals) EXPECT_EQ(text_of(f), f.filename().string());
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"a.json", "b.nii.gz", "sub", "sub/c.txt"}));
  EXPECT_EQ(set.files(), finals);
  EXPECT_THROW(set.add(dir / "d"), std::logic_error);
  EXPECT_THROW(set.commit(), std::logic_error);
}

TEST(OutputSet, FailurePartWayLeavesNoneAndTheOldFiles) {
  const test::TempDir dir;
  write_text_atomically(dir / "a.txt", "old a\n");
  std::string error;
  {
    OutputSet set;
    write_text_atomically(set.add(dir / "a.txt"), "new a\n");
    write_text_atomically(set.add(dir / "b.txt"), "new b\n");
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previous = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved;
    limited.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    try {
      write_text_atomically(set.add(dir / "c.txt"), std::string(10000, 'c'));
      set.commit();
    } catch (const std::exception& e) {
      error = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous);
    EXPECT_EQ(text_of(dir / "a.txt"), "old a\n");  // nothing renamed yet
  }                                                // destroyed uncommitted
  EXPECT_NE(error.find("c.txt.partial: write failed: File too large"), std::string::npos) << error;
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"a.txt"});
  EXPECT_EQ(text_of(dir / "a.txt"), "old a\n");
}

TEST(OutputSet, AFileNeverWrittenFailsTheCommitAndNothingAppears) {
  const test::TempDir dir;
  std::string error;
  {
    OutputSet set;
    write_text_atomically(set.add(dir / "a.txt"), "a\n");
    set.add(dir / "missing.txt");
    try {
      set.commit();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  EXPECT_NE(error.find("missing.txt"), std::string::npos) << error;
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(OutputSet, FolderThatCannotBeMadeIsAnErrorNamingIt) {
  const test::TempDir dir;
  OutputSet set;
  try {
    set.add(dir / "no-such-folder" / "a.txt");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-folder"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(OutputSet, SigtermWhileWritingRemovesTheTemporaries) {
  const test::TempDir dir;
  const int status = in_child([&] {
    OutputSet set;
    write_text_atomically(set.add(dir / "a.txt"), "a\n");
    write_text_atomically(set.add(dir / "b.txt"), "b\n");
    ::raise(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(listing(dir.path()).empty()) << "left " << listing(dir.path()).front();
}

TEST(OutputSet, SigtermDuringTheRenamesWaitsForAllOfThem) {
  const test::TempDir dir;
  const int status = in_child([&] {
    OutputSet set;
    for (const char* name : {"a.txt", "b.txt", "c.txt"}) write_text_atomically(set.add(dir / name), name);
    set.commit([](size_t k) {
      if (k == 0) ::raise(SIGTERM);  // after the first rename, before the others
    });
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;  // the signal was acted on, after the commit
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"a.txt", "b.txt", "c.txt"}));
  EXPECT_EQ(text_of(dir / "c.txt"), "c.txt");
}

}  // namespace
}  // namespace rtf::io
