// ctest-label: e2e
// The series assembler (scanner/assemble/series_assembler.hpp) on pyneal's real exports (scanner/ of the extra data,
// RTF_EXTRA_DATA_DIR): GE's 54 single-slice files fed in a shuffled order make exactly 3 volumes, each equal to
// dcm2niix's (run by the test); Siemens mosaics arriving in reverse order keep their indices; both series interleaved
// in one folder make two runs; a repeated file is a duplicate; a non-DICOM file, another series, another --format are
// skipped with a reason; a truncated copy is incomplete (offered again later); a volume short of a slice waits and says
// so; a PAR/REC pair too large for the memory left (a real PAR made 8192 x 8192, its REC sparse) is skipped with a
// reason naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "scanner/assemble/series_assembler.hpp"
#include "tests/support/address_space_limit.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/dcm2niix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGeFirst = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
constexpr const char* kSiemensFirst = "scanner/pyneal_Siemens/funcData/001_000013_000001.dcm";

std::vector<fs::path> files_in(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(folder)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SeriesAssembler, GeSlicesInAnyOrderMakeDcm2niixsVolumes) {
  const auto first = test::extra_data(kGeFirst);
  if (!first) GTEST_SKIP() << test::missing_extra_data(kGeFirst);
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  const Image theirs = test::dcm2niix_of(first->parent_path(), work.path());
  ASSERT_EQ(theirs.nt(), 3);
  std::vector<fs::path> files = files_in(first->parent_path());
  ASSERT_EQ(files.size(), 54u);
  std::mt19937 rng(test::test_seed());
  std::shuffle(files.begin(), files.end(), rng);
  SeriesAssembler assembler;
  std::vector<AssembledVolume> volumes;
  for (const auto& f : files) {
    AddResult r = assembler.add(f);
    ASSERT_EQ(r.status, AddResult::Status::kUsed) << r.reason;
    for (auto& v : r.volumes) volumes.push_back(std::move(v));
  }
  ASSERT_EQ(volumes.size(), 3u);
  EXPECT_TRUE(assembler.waiting().empty());
  std::vector<int64_t> seen;
  for (const auto& v : volumes) {
    EXPECT_EQ(v.run, "series-006");
    EXPECT_EQ(v.files.size(), 18u);
    seen.push_back(v.index);
    test::expect_same_volume(v.volume.image, theirs, v.index);
    EXPECT_NEAR(v.volume.image.header().tr_s, 1.0, 1e-9);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2}));
}

TEST(SeriesAssembler, MosaicsKeepTheirIndicesInAnyOrder) {
  const auto first = test::extra_data(kSiemensFirst);
  if (!first) GTEST_SKIP() << test::missing_extra_data(kSiemensFirst);
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  const Image theirs = test::dcm2niix_of(first->parent_path(), work.path());
  std::vector<fs::path> files = files_in(first->parent_path());
  std::reverse(files.begin(), files.end());
  SeriesAssembler assembler;
  for (size_t k = 0; k < files.size(); ++k) {
    AddResult r = assembler.add(files[k]);
    ASSERT_EQ(r.status, AddResult::Status::kUsed) << r.reason;
    ASSERT_EQ(r.volumes.size(), 1u);
    EXPECT_EQ(r.volumes[0].run, "series-013");
    EXPECT_EQ(r.volumes[0].index, static_cast<int64_t>(files.size() - 1 - k));
    test::expect_same_volume(r.volumes[0].volume.image, theirs, r.volumes[0].index);
    EXPECT_EQ(r.volumes[0].volume.slice_timing_s.size(), 18u);
  }
  // The same file again (rewritten in place, or copied twice) is not a second volume.
  const AddResult again = assembler.add(files[1]);
  EXPECT_EQ(again.status, AddResult::Status::kDuplicate);
  EXPECT_TRUE(again.volumes.empty());
}

TEST(SeriesAssembler, TwoSeriesInOneFolderMakeTwoRuns) {
  const auto ge = test::extra_data(kGeFirst);
  const auto siemens = test::extra_data(kSiemensFirst);
  if (!ge || !siemens) GTEST_SKIP() << test::missing_extra_data(kGeFirst);
  std::vector<fs::path> a = files_in(ge->parent_path()), b = files_in(siemens->parent_path());
  std::vector<fs::path> mixed;
  for (size_t k = 0; k < a.size(); ++k) {
    mixed.push_back(a[k]);
    if (k % 18 == 5 && !b.empty()) {
      mixed.push_back(b.back());
      b.pop_back();
    }
  }
  SeriesAssembler assembler;
  std::map<std::string, int> per_run;
  for (const auto& f : mixed) {
    const AddResult r = assembler.add(f);
    ASSERT_EQ(r.status, AddResult::Status::kUsed) << r.reason;
    for (const auto& v : r.volumes) ++per_run[v.run];
  }
  EXPECT_EQ(per_run, (std::map<std::string, int>{{"series-006", 3}, {"series-013", 3}}));
}

TEST(SeriesAssembler, SkipsWhatItCannotUseAndSaysWhy) {
  const auto ge = test::extra_data(kGeFirst);
  const auto siemens = test::extra_data(kSiemensFirst);
  if (!ge || !siemens) GTEST_SKIP() << test::missing_extra_data(kGeFirst);
  const test::TempDir work;
  const fs::path text = work.path() / "notes.txt";
  std::ofstream(text) << "not an image\n";
  SeriesAssembler any;
  AddResult r = any.add(text);
  EXPECT_EQ(r.status, AddResult::Status::kSkipped);
  EXPECT_NE(r.reason.find("not a DICOM file"), std::string::npos) << r.reason;
  EXPECT_EQ(any.add(work.path() / "vanished.dcm").status, AddResult::Status::kSkipped);

  // A mosaic cut short (a console still writing it): DICOM by its preamble, not readable yet.
  const fs::path cut = work.path() / "cut.dcm";
  {
    std::ifstream in(*siemens, std::ios::binary);
    std::vector<char> bytes(std::istreambuf_iterator<char>(in), {});
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 3));
  }
  r = any.add(cut);
  EXPECT_EQ(r.status, AddResult::Status::kIncomplete) << r.reason;
  EXPECT_TRUE(r.volumes.empty());

  AssemblerOptions only13;
  only13.series = 13;
  SeriesAssembler series13(only13);
  r = series13.add(*ge);
  EXPECT_EQ(r.status, AddResult::Status::kSkipped);
  EXPECT_NE(r.reason.find("series 6, not 13"), std::string::npos) << r.reason;
  EXPECT_EQ(series13.add(*siemens).volumes.size(), 1u);

  AssemblerOptions mosaic_only;
  mosaic_only.format = ScannerFormat::kSiemensMosaic;
  SeriesAssembler mosaics(mosaic_only);
  r = mosaics.add(*ge);
  EXPECT_EQ(r.status, AddResult::Status::kSkipped);
  EXPECT_NE(r.reason.find("not --format siemens-mosaic"), std::string::npos) << r.reason;
}

// pyneal's first Philips PAR with every image 8192 x 8192 (30 images of 128 MiB: a 3.75 GiB REC, sparse), assembled
// under an address-space ceiling 1 GiB above what the process uses: out of memory, and the reason names the file.
TEST(SeriesAssembler, OutOfMemoryIsASkipNamingTheFile) {
  const std::string first = "scanner/pyneal_Philips/funcData/0001/Dump-0000.par";
  const auto par = test::extra_data(first);
  if (!par) GTEST_SKIP() << test::missing_extra_data(first);
  const test::TempDir work;
  const fs::path folder = work.path() / "0001";
  fs::create_directories(folder);
  std::ifstream in(*par);
  std::ofstream out(folder / "Dump-0000.par");
  int images = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (w.size() > 40 && std::isdigit(static_cast<unsigned char>(line.front())) != 0) {  // an image line
      w[9] = w[10] = "8192";                                                             // recon resolution x, y
      line.clear();
      for (const std::string& word : w) line += word + " ";
      ++images;
    }
    out << line << "\n";
  }
  out.close();
  ASSERT_EQ(images, 30);
  const fs::path rec = folder / "Dump-0000.rec";
  std::ofstream(rec).put('x');
  fs::resize_file(rec, uint64_t{30} * 8192 * 8192 * 2);
  SeriesAssembler assembler;
  EXPECT_EQ(assembler.add(folder / "Dump-0000.par").status, AddResult::Status::kUsed);  // waits for its REC
  const test::AddressSpaceLimit ceiling(uint64_t{1} << 30);
  const AddResult r = assembler.add(rec);
  EXPECT_EQ(r.status, AddResult::Status::kSkipped);
  EXPECT_NE(r.reason.find(rec.string() + ": out of memory"), std::string::npos) << r.reason;
}

TEST(SeriesAssembler, AVolumeShortOfASliceWaitsAndSaysSo) {
  const auto ge = test::extra_data(kGeFirst);
  if (!ge) GTEST_SKIP() << test::missing_extra_data(kGeFirst);
  SeriesAssembler assembler;
  int used = 0;
  for (const auto& f : files_in(ge->parent_path())) {
    if (f.filename() == "i2862280.MRDC.1") continue;  // never arrives
    const AddResult r = assembler.add(f);
    used += static_cast<int>(r.volumes.size());
    // A slice of a volume still waiting, seen twice, is a duplicate.
    if (f.filename() == "i2862281.MRDC.2") {
      EXPECT_EQ(assembler.add(f).status, AddResult::Status::kDuplicate);
    }
  }
  EXPECT_EQ(used, 2);
  const std::vector<std::string> waiting = assembler.waiting();
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0], "series-006 volume 0: 17 slices so far");
}

}  // namespace
}  // namespace rtf::dicom
