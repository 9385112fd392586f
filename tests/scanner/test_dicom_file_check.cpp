// ctest-label: unit
// The whole-file check that guards every GDCM read (scanner/dicom/dicom_file_check.hpp): pyneal's real Siemens mosaic
// and GE slice, also re-encoded by gdcmconv as implicit VR and as RLE (encapsulated pixel data in fragments), are
// complete; every one of them cut short — at each of the first 1,500 bytes and at 400 places through the rest — is
// truncated (never complete), and read_dicom_header on the cut file throws DicomIncomplete instead of letting GDCM
// abort the process; a text file is not DICOM; a stray item delimiter is malformed; the RLE file decodes to the
// original's pixels. File size never matters (issue 35): an 8 GiB file that is not DICOM costs the check its first
// 512 bytes, and pyneal's GE slice whose pixel data claim 3.75 GiB (a sparse file) costs it under 256 kB and is refused
// by the pixel reader, under an address-space ceiling of 1 GiB, before GDCM reads them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scanner/dicom/dicom_file_check.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "scanner/dicom/dicom_pixels.hpp"
#include "tests/support/address_space_limit.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;
using Status = DicomFileCheck::Status;

std::vector<char> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& file, const std::vector<char>& bytes, size_t count) {
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(count));
}

// The real files, and gdcmconv's implicit-VR and RLE versions of them where gdcmconv is installed.
std::vector<fs::path> variants(const test::TempDir& work) {
  std::vector<fs::path> out;
  for (const char* name :
       {"scanner/pyneal_Siemens/funcData/001_000013_000001.dcm", "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1"}) {
    const auto file = test::extra_data(name);
    if (!file) continue;
    out.push_back(*file);
    if (std::system("command -v gdcmconv >/dev/null 2>&1") != 0) continue;
    for (const std::string option : {"--implicit", "--rle"}) {
      const fs::path converted = work.path() / (file->filename().string() + option.substr(2) + ".dcm");
      const std::string command =
          "gdcmconv " + option + " '" + file->string() + "' '" + converted.string() + "' >/dev/null 2>&1";
      EXPECT_EQ(std::system(command.c_str()), 0) << command;
      out.push_back(converted);
    }
  }
  return out;
}

TEST(DicomFileCheck, WholeFilesAreCompleteAndEveryCutIsTruncated) {
  const test::TempDir work;
  const std::vector<fs::path> files = variants(work);
  if (files.empty()) GTEST_SKIP() << test::missing_extra_data("scanner/pyneal_Siemens");
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const DicomFileCheck whole = check_dicom_file(file);
    EXPECT_TRUE(whole.complete()) << whole.reason;
    const std::vector<char> bytes = bytes_of(file);
    const fs::path cut = work.path() / "cut.dcm";
    std::vector<size_t> lengths;
    for (size_t n = 0; n < std::min<size_t>(1500, bytes.size()); ++n) lengths.push_back(n);
    for (size_t k = 0; k < 400; ++k) lengths.push_back(1500 + (bytes.size() - 1500) * k / 400);
    lengths.push_back(bytes.size() - 1);
    int truncated = 0;
    for (const size_t n : lengths) {
      write_bytes(cut, bytes, n);
      const DicomFileCheck c = check_dicom_file(cut);
      EXPECT_EQ(c.status, Status::kTruncated) << "cut at " << n << ": " << c.reason;
      truncated += c.status == Status::kTruncated ? 1 : 0;
      if (n % 97 == 0) {
        EXPECT_THROW(read_dicom_header(cut), DicomIncomplete) << "cut at " << n;
      }
    }
    EXPECT_EQ(truncated, static_cast<int>(lengths.size()));
  }
}

TEST(DicomFileCheck, RleFilesDecodeToTheOriginalPixels) {
  const test::TempDir work;
  const std::vector<fs::path> files = variants(work);
  if (files.size() < 3) GTEST_SKIP() << "needs the extra data (RTF_EXTRA_DATA_DIR) and gdcmconv (scripts/setup.sh)";
  EXPECT_EQ(read_dicom_header(files[2]).transfer_syntax_uid, "1.2.840.10008.1.2.5");
  EXPECT_EQ(read_dicom_pixels(files[2]).values, read_dicom_pixels(files[0]).values);
  EXPECT_EQ(read_dicom_pixels(files[1]).values, read_dicom_pixels(files[0]).values);
}

TEST(DicomFileCheck, TextIsNotDicomAndAStrayDelimiterIsMalformed) {
  const test::TempDir work;
  const fs::path text = work.path() / "notes.txt";
  std::ofstream(text) << "scan notes: subject moved in run 2\n";
  EXPECT_EQ(check_dicom_file(text).status, Status::kNotDicom);
  EXPECT_THROW(read_dicom_header(text), DicomError);
  const fs::path zeros = work.path() / "zeros.dcm";  // a preamble still being written
  write_bytes(zeros, std::vector<char>(100, 0), 100);
  EXPECT_EQ(check_dicom_file(zeros).status, Status::kTruncated);
  EXPECT_EQ(check_dicom_file(work.path() / "absent.dcm").status, Status::kNotDicom);

  const auto file = test::extra_data("scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1");
  if (!file) GTEST_SKIP() << test::missing_extra_data("scanner/pyneal_GE");
  // An item delimiter (FFFE,E00D) inserted after the file meta group, outside any sequence.
  std::vector<char> bytes = bytes_of(*file);
  size_t pos = 132;
  while (bytes[pos] == 0x02 && bytes[pos + 1] == 0x00) {
    const std::string vr(&bytes[pos + 4], 2);
    const bool long_form = vr == "OB" || vr == "UN" || vr == "UT" || vr == "SQ" || vr == "OW";
    const auto u8 = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
    pos += long_form ? 12 + (u8(pos + 8) | u8(pos + 9) << 8 | u8(pos + 10) << 16 | u8(pos + 11) << 24)
                     : 8 + (u8(pos + 6) | u8(pos + 7) << 8);
  }
  const char delimiter[8] = {'\xFE', '\xFF', '\x0D', '\xE0', 0, 0, 0, 0};
  bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(pos), delimiter, delimiter + 8);
  const fs::path bad = work.path() / "bad.dcm";
  write_bytes(bad, bytes, bytes.size());
  const DicomFileCheck c = check_dicom_file(bad);
  EXPECT_EQ(c.status, Status::kMalformed) << c.reason;
  EXPECT_THROW(read_dicom_header(bad), DicomError);
}

TEST(DicomFileCheck, AHugeFileThatIsNotDicomCostsItsFirstBytes) {
  const test::TempDir work;
  const fs::path huge = work.path() / "scanner_console_dump.raw";
  std::ofstream(huge).put('x');
  fs::resize_file(huge, uint64_t{8} << 30);                  // sparse: costs no disk
  const test::AddressSpaceLimit ceiling(uint64_t{1} << 30);  // reading it whole fails, not takes 8 GB
  const DicomFileCheck c = check_dicom_file(huge);
  EXPECT_EQ(c.status, Status::kNotDicom) << c.reason;
  EXPECT_LE(c.bytes_read, 512u);
  try {
    read_dicom_header(huge);
    ADD_FAILURE() << "read_dicom_header took an 8 GiB file of zeros for DICOM";
  } catch (const DicomError& e) {
    EXPECT_NE(std::string(e.what()).find(huge.string() + ": not a DICOM file"), std::string::npos) << e.what();
  }
}

TEST(DicomFileCheck, HugePixelDataAreSkippedOverAndNeverRead) {
  const auto file = test::extra_data("scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1");
  if (!file) GTEST_SKIP() << test::missing_extra_data("scanner/pyneal_GE");
  const test::TempDir work;
  std::vector<char> bytes = bytes_of(*file);
  // The pixel data element (7FE0,0010) OW, the last one: its length made 3.75 GiB, the file extended to hold it.
  const std::string pixel_tag("\xE0\x7F\x10\x00OW\0\0", 8);
  const size_t at = std::string(bytes.begin(), bytes.end()).rfind(pixel_tag);
  ASSERT_NE(at, std::string::npos);
  const uint32_t length = 0xF0000000u;
  for (int k = 0; k < 4; ++k) bytes[at + 8 + static_cast<size_t>(k)] = static_cast<char>(length >> (8 * k) & 0xFF);
  const fs::path huge = work.path() / "huge_pixels.dcm";
  write_bytes(huge, bytes, bytes.size());
  fs::resize_file(huge, at + 12 + length);
  const test::AddressSpaceLimit ceiling(uint64_t{1} << 30);  // reading the pixel data fails, not takes 3.75 GB
  const DicomFileCheck c = check_dicom_file(huge);
  EXPECT_TRUE(c.complete()) << c.reason;
  EXPECT_EQ(c.native_pixel_bytes, length);
  EXPECT_LT(c.bytes_read, 256u << 10);
  EXPECT_EQ(read_dicom_header(huge).plane.rows, read_dicom_header(*file).plane.rows);
  try {
    read_dicom_pixels(huge);
    ADD_FAILURE() << "3.75 GiB of pixel data read for a single slice";
  } catch (const DicomError& e) {
    EXPECT_NE(std::string(e.what()).find(huge.string() + ": its pixel data hold 4026531840 bytes, far more"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rtf::dicom
