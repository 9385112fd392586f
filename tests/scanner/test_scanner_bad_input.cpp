// ctest-label: e2e
// Bad input for the scanner adapters (issue 18), each file through SeriesAssembler::add as `rtfmri scanner watch` sees
// it, on copies of pyneal's real Siemens mosaics and GE slices (scanner/ of the extra data, RTF_EXTRA_DATA_DIR) made
// wrong on purpose:
// 1. another modality (byte patch, and gdcmanon's CT and OT) is skipped as not MR;
// 2. a mosaic whose CSA NumberOfImagesInMosaic its tiles cannot hold (26, 37, 99999999) is skipped naming the count,
//    one whose count is no count (0, -3, 2.5, 1e99, nan, x) is refused as a MOSAIC without one, and 1 is a single
//    slice;
// 3. gdcmconv's JPEG lossless, JPEG 2000, JPEG-LS and RLE copies decode to the original's voxels (mosaic and GE slice);
//    copies whose codec header is overwritten, or relabelled with a syntax GDCM cannot decode (MPEG-2, HEVC, HTJ2K, a
//    made-up UID, another codec's), are skipped naming the transfer syntax; bytes overwritten mid-stream either are
//    refused or give other voxels (lossless JPEG has no checksum);
// 4. an empty file and a bare preamble are incomplete, a JSON sidecar is not DICOM; 300 files of random bytes behind a
//    DICM marker, 300 of random well-formed elements (random tags, VRs, sequences) and 300 real files with bytes
//    changed never crash (seeded by tests/support/test_seed.hpp);
// 5. CSA image headers written here with item counts in multiples of 6 read as Siemens' own, while 1 or 7 items, counts
//    or lengths past the end, wrong markers, unknown SyngoDTs — on which Debian's GDCM 3.0.21 aborts the process —
//    are refused with a reason naming the CSA problem, and 300 randomly mutated real CSA headers never abort.
// 6. one file for each way the fuzz loops made Debian's GDCM abort, segfault or allocate gigabytes is refused.
// Wherever a bad file arrives between volumes 1 and 2 of the series, the volumes sent before stay as they were, the
// third mosaic is still volume 2 of the same run and the first one is still a duplicate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "scanner/assemble/series_assembler.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "scanner/dicom/dicom_pixels.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<char>;
using Status = AddResult::Status;

constexpr const char* kSiemensFolder = "scanner/pyneal_Siemens/funcData";
constexpr const char* kGeSlice = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
constexpr uint32_t kUndefinedLength = 0xFFFFFFFFu;

Bytes bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& file, const Bytes& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool have_tool(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// Runs a DICOM tool (gdcmconv, gdcmanon) on `in`, writing `out`; false if it failed.
bool run_tool(const std::string& arguments, const fs::path& in, const fs::path& out) {
  const std::string command = arguments + " '" + in.string() + "' '" + out.string() + "' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

uint32_t le16(const Bytes& b, size_t pos) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[pos]) | static_cast<unsigned char>(b[pos + 1]) << 8);
}
uint32_t le32(const Bytes& b, size_t pos) {
  return le16(b, pos) | le16(b, pos + 2) << 16;
}
void put_le(Bytes& b, size_t pos, uint32_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) b[pos + static_cast<size_t>(k)] = static_cast<char>(v >> (8 * k) & 0xFF);
}

// A top-level element of an explicit VR little endian Part 10 file (pyneal's Siemens export, gdcmconv's copies).
struct Element {
  size_t start = 0, value = 0;
  uint32_t length = 0;
  bool long_form = false;
};

std::optional<Element> find_element(const Bytes& b, uint16_t group, uint16_t number) {
  size_t pos = 132;
  while (pos + 8 <= b.size()) {
    Element e;
    e.start = pos;
    const std::string vr(&b[pos + 4], 2);
    e.long_form = vr == "OB" || vr == "OW" || vr == "OF" || vr == "SQ" || vr == "UN" || vr == "UT" || vr == "UC" ||
                  vr == "UR" || vr == "OD" || vr == "OL";
    e.length = e.long_form ? le32(b, pos + 8) : le16(b, pos + 6);
    e.value = pos + (e.long_form ? 12 : 8);
    if (le16(b, pos) == group && le16(b, pos + 2) == number) return e;
    if (e.length == kUndefinedLength) return std::nullopt;  // only pixel data comes after
    pos = e.value + e.length;
  }
  return std::nullopt;
}

// Replaces an element's value (and its length; the meta group's length too for a group 0002 element).
void set_value(Bytes& b, const Element& e, std::string value) {
  if (value.size() % 2 != 0) value.push_back('\0');
  const auto delta = static_cast<int64_t>(value.size()) - static_cast<int64_t>(e.length);
  Bytes out(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(e.value));
  put_le(out, e.start + (e.long_form ? 8 : 6), static_cast<uint32_t>(value.size()), e.long_form ? 4 : 2);
  out.insert(out.end(), value.begin(), value.end());
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(e.value + e.length), b.end());
  if (le16(b, e.start) == 0x0002) {
    const auto group_length = find_element(out, 0x0002, 0x0000);
    put_le(out, group_length->value, static_cast<uint32_t>(le32(out, group_length->value) + delta), 4);
  }
  b = std::move(out);
}

std::string value_of(const Bytes& b, const Element& e) {
  return {&b[e.value], e.length};
}

// The fragments of encapsulated pixel data: (value offset, length) of each item after the basic offset table.
std::vector<std::pair<size_t, uint32_t>> fragments(const Bytes& b) {
  std::vector<std::pair<size_t, uint32_t>> out;
  const auto pixels = find_element(b, 0x7FE0, 0x0010);
  if (!pixels || pixels->length != kUndefinedLength) return out;
  size_t pos = pixels->value;
  bool offset_table = true;
  while (pos + 8 <= b.size() && le16(b, pos) == 0xFFFE && le16(b, pos + 2) == 0xE000) {
    const uint32_t length = le32(b, pos + 4);
    if (!offset_table) out.emplace_back(pos + 8, length);
    offset_table = false;
    pos += 8 + length;
  }
  return out;
}

// One explicit VR little endian element (a long-form VR gets a 4-byte length).
void append_element(Bytes& bytes, uint16_t group, uint16_t element, const std::string& vr, const Bytes& value) {
  const bool long_form = vr == "OB" || vr == "OW" || vr == "SQ" || vr == "UN" || vr == "UT" || vr == "OV" ||
                         vr == "SV" || vr == "UV" || vr == "UC" || vr == "UR" || vr == "OD" || vr == "OL";
  const size_t at = bytes.size();
  bytes.resize(at + (long_form ? 12 : 8));
  put_le(bytes, at, group, 2);
  put_le(bytes, at + 2, element, 2);
  bytes[at + 4] = vr[0];
  bytes[at + 5] = vr[1];
  if (long_form) {
    put_le(bytes, at + 8, static_cast<uint32_t>(value.size()), 4);
  } else {
    put_le(bytes, at + 6, static_cast<uint32_t>(value.size()), 2);
  }
  bytes.insert(bytes.end(), value.begin(), value.end());
}

// `count` elements with random tags (in order when `sorted`), VRs and values; an SQ holds 1-3 items (defined length) of
// random elements, down to depth 2; each VR is one that does not exist with probability `bad_vr`.
Bytes random_elements(std::mt19937& rng, int count, bool sorted, double bad_vr, int depth) {
  constexpr const char* kVrs[] = {"AE", "AS", "AT", "CS", "DA", "DS", "DT", "FD", "FL", "IS", "LO",
                                  "LT", "OB", "OD", "OL", "OV", "OW", "PN", "SH", "SL", "SQ", "SS",
                                  "ST", "SV", "TM", "UC", "UI", "UL", "UN", "UR", "US", "UT", "UV"};
  constexpr const char* kBadVrs[] = {"XX", "ox", "  ", "\0\0"};
  constexpr uint16_t kGroups[] = {0x0008, 0x0010, 0x0018, 0x0020, 0x0028, 0x0029, 0x0043, 0x7FE0};
  std::vector<std::pair<uint16_t, uint16_t>> tags;
  for (int e = 0; e < count; ++e) {
    tags.emplace_back(kGroups[rng() % std::size(kGroups)],
                      static_cast<uint16_t>(rng() % 4 == 0 ? rng() : rng() % 0x120));
  }
  if (sorted) std::sort(tags.begin(), tags.end());
  Bytes out;
  for (const auto& [group, element] : tags) {
    std::string vr = kVrs[rng() % std::size(kVrs)];
    if (std::uniform_real_distribution<double>(0, 1)(rng) < bad_vr) vr = std::string(kBadVrs[rng() % 4], 2);
    Bytes value;
    if (vr == "SQ" && depth < 2) {
      const int items = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int i = 0; i < items; ++i) {
        const Bytes content =
            random_elements(rng, std::uniform_int_distribution<int>(0, 5)(rng), true, bad_vr, depth + 1);
        Bytes item(8);
        put_le(item, 0, 0xFFFE, 2);
        put_le(item, 2, 0xE000, 2);
        put_le(item, 4, static_cast<uint32_t>(content.size()), 4);
        item.insert(item.end(), content.begin(), content.end());
        value.insert(value.end(), item.begin(), item.end());
      }
    } else {
      value.resize(2 * std::uniform_int_distribution<size_t>(0, 40)(rng));
      for (char& c : value) c = static_cast<char>(rng());
    }
    append_element(out, group, element, vr, value);
  }
  return out;
}

bool mentions(const AddResult& r, const std::string& text) {
  return r.reason.find(text) != std::string::npos;
}

// pyneal's three real mosaics of series 13. The first two are sent before each bad file, the third after it: the
// series must go on in the same run, with nothing sent before lost or sent again.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto first = test::extra_data(std::string(kSiemensFolder) + "/001_000013_000001.dcm");
    if (!first) GTEST_SKIP() << test::missing_extra_data(kSiemensFolder);
    for (int k = 1; k <= 3; ++k)
      mosaics_.push_back(first->parent_path() / ("001_000013_00000" + std::to_string(k) + ".dcm"));
  }

  // A fresh assembler that has built volumes 0 and 1 of series 13.
  SeriesAssembler primed() {
    SeriesAssembler assembler;
    for (int k = 0; k < 2; ++k) {
      const AddResult r = assembler.add(mosaics_[static_cast<size_t>(k)]);
      EXPECT_EQ(r.status, Status::kUsed) << r.reason;
      EXPECT_EQ(r.volumes.size(), 1u);
      if (!r.volumes.empty()) before_.push_back(r.volumes[0].volume.image.data());
    }
    return assembler;
  }

  // After a bad file: the third mosaic is volume 2 of the same run and equal to what a fresh assembler makes of it,
  // the first is a duplicate, nothing waits.
  void expect_series_goes_on(SeriesAssembler& assembler) {
    const AddResult third = assembler.add(mosaics_[2]);
    ASSERT_EQ(third.status, Status::kUsed) << third.reason;
    ASSERT_EQ(third.volumes.size(), 1u);
    EXPECT_EQ(third.volumes[0].run, "series-013");
    EXPECT_EQ(third.volumes[0].index, 2);
    EXPECT_EQ(third.volumes[0].volume.image.data(), mosaic_volume(mosaics_[2]).image.data());
    EXPECT_EQ(assembler.add(mosaics_[0]).status, Status::kDuplicate);
    EXPECT_TRUE(assembler.waiting().empty());
    ASSERT_EQ(before_.size(), 2u);
    EXPECT_EQ(before_[0], mosaic_volume(mosaics_[0]).image.data());
    EXPECT_EQ(before_[1], mosaic_volume(mosaics_[1]).image.data());
  }

  // Sends `file` between the primed volumes and the third one; returns what add said of it.
  AddResult add_between(const fs::path& file) {
    SeriesAssembler assembler = primed();
    AddResult r = assembler.add(file);
    EXPECT_TRUE(r.volumes.empty()) << file;
    expect_series_goes_on(assembler);
    before_.clear();
    return r;
  }

  std::vector<fs::path> mosaics_;
  std::vector<std::vector<float>> before_;
  test::TempDir work_;
};

// ---- 1. another modality ----------------------------------------------------------------------------------------

TEST_F(BadInput, AnotherModalityIsSkippedAsNotMr) {
  Bytes bytes = bytes_of(mosaics_[2]);
  const auto modality = find_element(bytes, 0x0008, 0x0060);
  ASSERT_TRUE(modality);
  ASSERT_EQ(value_of(bytes, *modality), "MR");
  std::memcpy(&bytes[modality->value], "CT", 2);
  const fs::path patched = work_ / "ct_patched.dcm";
  write_file(patched, bytes);
  AddResult r = add_between(patched);
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_TRUE(mentions(r, patched.string() + ": modality 'CT', not MR")) << r.reason;

  if (!have_tool("gdcmanon")) GTEST_SKIP() << "gdcmanon is not installed (libgdcm-tools, scripts/setup.sh)";
  // GDCM's own writer: a secondary-capture-like OT and a CT, the rest of the file as it was.
  for (const std::string m : {"CT", "OT"}) {
    const fs::path anon = work_ / ("anon_" + m + ".dcm");
    ASSERT_TRUE(run_tool("gdcmanon --dumb --replace 0008,0060=" + m, mosaics_[2], anon));
    r = add_between(anon);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(r, anon.string() + ": modality '" + m + "', not MR")) << r.reason;
  }
}

// ---- 2. a wrong mosaic slice count ------------------------------------------------------------------------------

TEST_F(BadInput, AMosaicWithAWrongSliceCountIsSkipped) {
  const Bytes original = bytes_of(mosaics_[2]);
  const auto csa = find_element(original, 0x0029, 0x1010);
  ASSERT_TRUE(csa);
  const std::string name = "NumberOfImagesInMosaic";
  const auto at =
      std::search(original.begin() + static_cast<std::ptrdiff_t>(csa->value),
                  original.begin() + static_cast<std::ptrdiff_t>(csa->value + csa->length), name.begin(), name.end());
  ASSERT_NE(at, original.end());
  // name[64], VM, VR[4], SyngoDT, item count, 77, then the first item's four lengths and its text "18      ".
  const size_t digits = static_cast<size_t>(at - original.begin()) + 64 + 5 * 4 + 16;
  ASSERT_EQ(std::string(&original[digits], 8), "18      ");
  const auto patched_copy = [&](const std::string& count) {
    Bytes bytes = original;
    std::string text = count;
    text.resize(8, ' ');
    std::memcpy(&bytes[digits], text.data(), 8);
    const fs::path patched = work_ / ("slices_" + count + ".dcm");
    write_file(patched, bytes);
    return patched;
  };
  // 320 x 320 pixels hold 5 x 5 tiles of 64 x 64: 26 slices need 6 x 6 tiles, which 320 does not divide.
  for (const std::string count : {"26", "37", "99999999"}) {
    SCOPED_TRACE(count);
    const fs::path patched = patched_copy(count);
    const AddResult r = add_between(patched);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(r, patched.string() + ": a mosaic of 320 x 320 does not hold")) << r.reason;
    EXPECT_TRUE(mentions(r, "for " + count + " slices")) << r.reason;
  }
  for (const std::string count : {"0", "-3", "2.5", "1e99", "nan", "x"}) {
    SCOPED_TRACE(count);
    const fs::path patched = patched_copy(count);
    const AddResult r = add_between(patched);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(r, patched.string() + ": a MOSAIC image with CSA NumberOfImagesInMosaic '" + count +
                                "': its slices cannot be unpacked"))
        << r.reason;
  }
  // One slice: a single image, as dcm2niix reads it; the assembler wants --slices for single images.
  const fs::path one = patched_copy("1");
  const AddResult r = add_between(one);
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_TRUE(mentions(r, one.string() + ": a single-slice file")) << r.reason;
}

// ---- 3. compressed transfer syntaxes ----------------------------------------------------------------------------

struct Codec {
  const char* option;
  const char* transfer_syntax;
};
constexpr Codec kCodecs[] = {{"--jpeg", "1.2.840.10008.1.2.4.70"},
                             {"--j2k", "1.2.840.10008.1.2.4.90"},
                             {"--jpegls", "1.2.840.10008.1.2.4.80"},
                             {"--rle", "1.2.840.10008.1.2.5"}};

TEST_F(BadInput, CompressedCopiesDecodeToTheSameVoxels) {
  if (!have_tool("gdcmconv")) GTEST_SKIP() << "gdcmconv is not installed (libgdcm-tools, scripts/setup.sh)";
  const auto ge = test::extra_data(kGeSlice);
  for (const Codec& codec : kCodecs) {
    SCOPED_TRACE(codec.option);
    const fs::path copy = work_ / (std::string(codec.option + 2) + ".dcm");
    ASSERT_TRUE(run_tool(std::string("gdcmconv ") + codec.option, mosaics_[2], copy));
    EXPECT_EQ(read_dicom_header(copy).transfer_syntax_uid, codec.transfer_syntax);
    EXPECT_FALSE(fragments(bytes_of(copy)).empty());  // really encapsulated
    SeriesAssembler assembler;
    const AddResult r = assembler.add(copy);
    ASSERT_EQ(r.status, Status::kUsed) << r.reason;
    ASSERT_EQ(r.volumes.size(), 1u);
    EXPECT_EQ(r.volumes[0].volume.image.data(), mosaic_volume(mosaics_[2]).image.data());
    if (ge) {
      const fs::path slice = work_ / ("ge_" + std::string(codec.option + 2) + ".dcm");
      ASSERT_TRUE(run_tool(std::string("gdcmconv ") + codec.option, *ge, slice));
      EXPECT_EQ(read_dicom_header(slice).transfer_syntax_uid, codec.transfer_syntax);
      EXPECT_EQ(read_dicom_pixels(slice).values, read_dicom_pixels(*ge).values);
    }
  }
}

TEST_F(BadInput, CorruptOrUndecodableCompressedDataIsSkipped) {
  if (!have_tool("gdcmconv")) GTEST_SKIP() << "gdcmconv is not installed (libgdcm-tools, scripts/setup.sh)";
  for (const Codec& codec : kCodecs) {
    SCOPED_TRACE(codec.option);
    const fs::path copy = work_ / (std::string(codec.option + 2) + ".dcm");
    ASSERT_TRUE(run_tool(std::string("gdcmconv ") + codec.option, mosaics_[2], copy));
    const Bytes original = bytes_of(copy);
    const auto frags = fragments(original);
    ASSERT_FALSE(frags.empty());
    const auto [start, length] = frags.front();
    ASSERT_GT(length, 256u);
    // The codec's own header (markers, RLE segment table) overwritten: GDCM refuses to decode it.
    Bytes bytes = original;
    for (size_t k = 0; k < 64; ++k) bytes[start + k] = static_cast<char>(0xA5 ^ k);
    const fs::path corrupt = work_ / ("corrupt_head_" + copy.filename().string());
    write_file(corrupt, bytes);
    AddResult r = add_between(corrupt);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(
        r, corrupt.string() + ": cannot decode the pixel data (transfer syntax " + codec.transfer_syntax + ")"))
        << r.reason;
    // 64 bytes overwritten in the middle of the coded stream: lossless JPEG and JPEG 2000 carry no checksum, so a
    // decoder may return other voxels without an error. Either it is refused or its voxels differ; never a crash.
    bytes = original;
    for (size_t k = 0; k < 64; ++k) bytes[start + length / 2 + k] = static_cast<char>(0xA5 ^ k);
    const fs::path middle = work_ / ("corrupt_middle_" + copy.filename().string());
    write_file(middle, bytes);
    SeriesAssembler fresh;
    r = fresh.add(middle);
    if (r.status == Status::kUsed) {
      ASSERT_EQ(r.volumes.size(), 1u);
      EXPECT_NE(r.volumes[0].volume.image.data(), mosaic_volume(mosaics_[2]).image.data());
    } else {
      EXPECT_EQ(r.status, Status::kSkipped);
      EXPECT_TRUE(mentions(r, middle.string() + ": cannot decode the pixel data")) << r.reason;
    }
    std::cout << codec.option << " with 64 bytes overwritten mid-stream: " << to_string(r.status) << "\n";
    // Transfer syntaxes GDCM cannot decode (MPEG-2, HEVC, HTJ2K, a made-up UID), or one codec's data labelled as
    // another's.
    for (const std::string syntax : {"1.2.840.10008.1.2.4.100", "1.2.840.10008.1.2.4.107", "1.2.840.10008.1.2.4.201",
                                     "1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.70", "1.2.3.4.5.6"}) {
      if (syntax == codec.transfer_syntax) continue;
      SCOPED_TRACE(syntax);
      bytes = original;
      set_value(bytes, *find_element(bytes, 0x0002, 0x0010), syntax);
      const fs::path relabelled = work_ / ("ts_" + syntax + "_" + copy.filename().string());
      write_file(relabelled, bytes);
      r = add_between(relabelled);
      EXPECT_EQ(r.status, Status::kSkipped);
      EXPECT_TRUE(mentions(r, relabelled.string() + ": ")) << r.reason;
      EXPECT_TRUE(mentions(r, "(transfer syntax " + syntax + ")")) << r.reason;
    }
  }
}

// ---- 4. garbage -------------------------------------------------------------------------------------------------

TEST_F(BadInput, GarbageNeverCrashesAndGetsItsDocumentedStatus) {
  const fs::path empty = work_ / "just_created.dcm";
  write_file(empty, {});
  AddResult r = add_between(empty);
  EXPECT_EQ(r.status, Status::kIncomplete) << r.reason;  // a file the console has only just created
  EXPECT_TRUE(mentions(r, empty.string() + ": ")) << r.reason;

  const fs::path zeros = work_ / "preamble_so_far.dcm";
  write_file(zeros, Bytes(128, '\0'));
  r = add_between(zeros);
  EXPECT_EQ(r.status, Status::kIncomplete) << r.reason;

  Bytes preamble(132, '\0');
  std::memcpy(&preamble[128], "DICM", 4);
  const fs::path marker = work_ / "preamble_and_marker.dcm";
  write_file(marker, preamble);
  r = add_between(marker);
  EXPECT_EQ(r.status, Status::kIncomplete) << r.reason;
  EXPECT_TRUE(mentions(r, marker.string() + ": the file ends")) << r.reason;

  const fs::path sidecar = work_ / "001_000013_000003.json";
  std::ofstream(sidecar) << R"({"Modality": "MR", "RepetitionTime": 2.0, "SliceTiming": [0.0, 1.0]})"
                         << "\n";
  r = add_between(sidecar);
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_TRUE(mentions(r, sidecar.string() + ": not a DICOM file")) << r.reason;

  // Random bytes behind a DICM marker, of random lengths, all through one assembler between volumes 1 and 2.
  std::mt19937 rng(test::test_seed());
  SeriesAssembler assembler = primed();
  std::map<Status, int> statuses;
  for (int k = 0; k < 300; ++k) {
    Bytes bytes(132 + std::uniform_int_distribution<size_t>(0, 4096)(rng));
    for (char& c : bytes) c = static_cast<char>(rng());
    std::memcpy(&bytes[128], "DICM", 4);
    if (k % 3 == 1 && bytes.size() >= 138) std::memcpy(&bytes[132], "\x02\x00\x10\x00UI", 6);  // a meta element
    const fs::path file = work_ / ("random_" + std::to_string(k) + ".dcm");
    write_file(file, bytes);
    r = assembler.add(file);
    ++statuses[r.status];
    EXPECT_TRUE(r.status == Status::kSkipped || r.status == Status::kIncomplete) << file << ": " << r.reason;
    EXPECT_TRUE(mentions(r, file.string() + ": ")) << r.reason;
    fs::remove(file);
  }
  // Well-formed elements with random tags, VRs and values (sequences of items of random elements among them) behind
  // the real file meta group and before a pixel data element: the whole-file walk passes them to GDCM. One file in 10
  // has an element with a VR that does not exist, which the walk refuses.
  const Bytes real = bytes_of(mosaics_[2]);
  const size_t meta_end = find_element(real, 0x0008, 0x0005)->start;
  for (int k = 0; k < 300; ++k) {
    Bytes bytes(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(meta_end));
    const Bytes elements =
        random_elements(rng, std::uniform_int_distribution<int>(1, 40)(rng), k % 4 != 0, k % 10 == 0 ? 0.05 : 0.0, 0);
    bytes.insert(bytes.end(), elements.begin(), elements.end());
    append_element(bytes, 0x7FE0, 0x0010, "OW", Bytes(4 * (k % 8), '\x01'));
    const fs::path file = work_ / ("random_elements_" + std::to_string(k) + ".dcm");
    write_file(file, bytes);
    r = assembler.add(file);
    ++statuses[r.status];
    EXPECT_TRUE(r.status == Status::kSkipped || r.status == Status::kIncomplete) << file << ": " << r.reason;
    EXPECT_TRUE(mentions(r, file.string() + ": ")) << r.reason;
    fs::remove(file);
  }
  expect_series_goes_on(assembler);
  std::cout << "random files: " << statuses[Status::kSkipped] << " skipped, " << statuses[Status::kIncomplete]
            << " incomplete\n";
}

// Real files with a few bytes changed anywhere before their pixel data (header, CSA): any status, but never a crash,
// and a reason for every refusal.
TEST_F(BadInput, MutatedRealFilesNeverCrash) {
  std::vector<fs::path> originals = mosaics_;
  if (const auto ge = test::extra_data(kGeSlice)) originals.push_back(*ge);
  std::mt19937 rng(test::test_seed());
  std::map<Status, int> statuses;
  for (int k = 0; k < 300; ++k) {
    const fs::path& source = originals[static_cast<size_t>(k) % originals.size()];
    Bytes bytes = bytes_of(source);
    const auto pixels = find_element(bytes, 0x7FE0, 0x0010);
    const size_t end = pixels ? pixels->value : bytes.size();
    const int changes = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int c = 0; c < changes; ++c) {
      bytes[std::uniform_int_distribution<size_t>(132, end - 1)(rng)] = static_cast<char>(rng());
    }
    const fs::path file = work_ / ("mutated_" + std::to_string(k) + ".dcm");
    write_file(file, bytes);
    SeriesAssembler assembler;
    const AddResult r = assembler.add(file);
    ++statuses[r.status];
    if (r.status != Status::kUsed) {
      EXPECT_TRUE(mentions(r, file.string() + ": ") || mentions(r, "series-")) << r.reason;
    }
    fs::remove(file);
  }
  std::cout << "mutated files: " << statuses[Status::kUsed] << " used, " << statuses[Status::kSkipped] << " skipped, "
            << statuses[Status::kIncomplete] << " incomplete, " << statuses[Status::kDuplicate] << " duplicate\n";
}

// What the fuzz loops above found Debian's GDCM 3.0.21 doing with such files, each now refused before GDCM sees it:
// an unknown VR (GDCM reads a 4-byte length from it and allocated 3.5 GB), a meta element's VR that GDCM and the
// whole-file walk read with different length forms (an assertion), pixel data with VR SQ (an assertion), an element
// running past the end of its item in a defined-length sequence (gigabytes allocated), Modality with a binary VR that
// StringFilter does not convert (an assertion), SamplesPerPixel 88 (an assertion), Columns beyond the pixel data
// (a segfault in GDCM's raw codec), a Part 10 file without a TransferSyntaxUID (GDCM guessed big endian, 800 MB).
TEST_F(BadInput, FilesOnWhichGdcmAbortedAreRefused) {
  const Bytes original = bytes_of(mosaics_[2]);
  const auto element = [&](uint16_t group, uint16_t number) {
    const auto e = find_element(original, group, number);
    EXPECT_TRUE(e) << std::hex << group << "," << number;
    return e.value_or(Element{});
  };
  // Replaces a whole element (header and value) by `vr` and `value`.
  const auto replaced = [&](const Element& e, const std::string& vr, const Bytes& value) {
    Bytes out(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(e.start));
    append_element(out, le16(original, e.start), le16(original, e.start + 2), vr, value);
    out.insert(out.end(), original.begin() + static_cast<std::ptrdiff_t>(e.value + e.length), original.end());
    return out;
  };
  struct Case {
    std::string name;
    Bytes bytes;
    std::string reason;
  };
  std::vector<Case> cases;
  Bytes b = original;
  const size_t manufacturer = element(0x0008, 0x0070).start;
  std::memcpy(&b[manufacturer + 4], "ox", 2);
  cases.push_back({"unknown_vr", b,
                   "element (0008,0070) at byte " + std::to_string(manufacturer) + " has VR 'ox', not a DICOM VR"});
  b = original;
  const size_t version_name = find_element(original, 0x0002, 0x0013)->start;
  std::memcpy(&b[version_name + 4], "SU", 2);
  cases.push_back({"meta_vr", b, "meta element (0002,0013) has VR 'SU', not a DICOM VR"});
  const Element pixels = element(0x7FE0, 0x0010);
  b = original;
  std::memcpy(&b[pixels.start + 4], "SQ", 2);
  cases.push_back({"pixel_data_sq", b, "with VR SQ"});
  // (0008,1140) holds items of defined length; its first item's first element made 0xBB1A bytes long.
  b = original;
  const Element referenced = element(0x0008, 0x1140);
  ASSERT_EQ(le16(b, referenced.value + 8), 0x0008u);
  put_le(b, referenced.value + 8 + 6, 0xBB1A, 2);
  cases.push_back({"past_its_item", b, "runs past the end of its"});
  cases.push_back({"modality_od", replaced(element(0x0008, 0x0060), "OD", Bytes(8, '\x01')),
                   "(0008,0060) is not a value of a type it can have (VR OD)"});
  b = original;
  b[133] = 0x56;  // the first meta element's group 0002 -> 5602: GDCM guessed big endian and allocated 800 MB
  cases.push_back({"no_meta_group", b, "no TransferSyntaxUID (0002,0010) in a file meta group"});
  b = original;
  put_le(b, element(0x0028, 0x0002).value, 88, 2);
  cases.push_back({"samples_88", b, "88 samples per pixel"});
  b = original;
  put_le(b, element(0x0028, 0x0011).value, 40000, 2);
  cases.push_back({"columns_40000", b, "40000 x 320 x 1 pixels of 16 bits do not fit the 204800 bytes"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path file = work_ / (c.name + ".dcm");
    write_file(file, c.bytes);
    const AddResult r = add_between(file);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(r, file.string() + ": ")) << r.reason;
    EXPECT_TRUE(mentions(r, c.reason)) << r.reason;
  }
}

// ---- 5. CSA headers GDCM would abort on -------------------------------------------------------------------------

// A CSA2 element written here (independently of scanner/dicom/dicom_writer.cpp): name[64], VM, VR[4], SyngoDT, item
// count, 77 (205 without items); per item four int32 (length, length, 77, length) and the text with its NUL padded to
// 4 bytes; items past the values empty (0, 0, 205, 0).
struct CsaEntry {
  std::string name;
  int32_t vm;
  std::string vr;
  int32_t syngo_dt;
  std::vector<std::string> values;
  int32_t items;  // >= values.size()
};

void put_i32(std::string& out, int32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>(static_cast<uint32_t>(v) >> (8 * k) & 0xFF));
}

std::string csa_header(const std::vector<CsaEntry>& entries) {
  std::string out = std::string("SV10\4\3\2\1", 8);
  put_i32(out, static_cast<int32_t>(entries.size()));
  put_i32(out, 77);
  for (const CsaEntry& e : entries) {
    std::string name(64, '\0'), vr(4, '\0');
    name.replace(0, e.name.size(), e.name);
    vr.replace(0, e.vr.size(), e.vr);
    out += name;
    put_i32(out, e.vm);
    out += vr;
    put_i32(out, e.syngo_dt);
    put_i32(out, e.items);
    put_i32(out, e.items > 0 ? 77 : 205);
    for (int32_t i = 0; i < e.items; ++i) {
      if (i < static_cast<int32_t>(e.values.size())) {
        std::string text = e.values[static_cast<size_t>(i)] + '\0';
        const auto length = static_cast<int32_t>(text.size());
        for (const int32_t v : {length, length, 77, length}) put_i32(out, v);
        text.resize((text.size() + 3) / 4 * 4, '\0');
        out += text;
      } else {
        for (const int32_t v : {0, 0, 205, 0}) put_i32(out, v);
      }
    }
  }
  put_i32(out, 0);
  return out;
}

std::string fixed8(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.8f", v);
  return text;
}

class CsaInput : public BadInput {
 protected:
  void SetUp() override {
    BadInput::SetUp();
    if (IsSkipped()) return;
    original_ = bytes_of(mosaics_[2]);
    header_ = read_dicom_header(mosaics_[2]);
  }

  // pyneal's NumberOfImagesInMosaic, SliceNormalVector and MosaicRefAcqTimes with `items` items per element (at
  // least as many as it has values).
  std::vector<CsaEntry> entries(int items_per_element) const {
    std::vector<std::string> normal, times;
    for (const double v : *header_.csa_slice_normal) normal.push_back(fixed8(v));
    for (const double v : header_.mosaic_ref_acq_times_ms) times.push_back(fixed8(v));
    const auto items = [&](size_t values) {
      return std::max<int32_t>(items_per_element, static_cast<int32_t>(values));
    };
    return {{"NumberOfImagesInMosaic", 1, "US", 10, {std::to_string(header_.mosaic_slices)}, items(1)},
            {"SliceNormalVector", 3, "FD", 4, normal, items(3)},
            {"MosaicRefAcqTimes", 0, "FD", 4, times, items(times.size())}};
  }

  // A copy of the third mosaic with `csa` as its CSA image header.
  fs::path with_csa(const std::string& csa, const std::string& name) {
    Bytes bytes = original_;
    set_value(bytes, *find_element(bytes, 0x0029, 0x1010), csa);
    const fs::path file = work_ / (name + ".dcm");
    write_file(file, bytes);
    return file;
  }

  Bytes original_;
  DicomHeader header_;
};

TEST_F(CsaInput, ItemCountsInMultiplesOfSixReadAsSiemensOwn) {
  for (const int items : {6, 24}) {
    SCOPED_TRACE(items);
    const fs::path file = with_csa(csa_header(entries(items)), "csa_items_" + std::to_string(items));
    SeriesAssembler assembler;
    const AddResult r = assembler.add(file);
    ASSERT_EQ(r.status, Status::kUsed) << r.reason;
    ASSERT_EQ(r.volumes.size(), 1u);
    const DicomVolume theirs = mosaic_volume(mosaics_[2]);
    EXPECT_EQ(r.volumes[0].volume.image.data(), theirs.image.data());
    EXPECT_TRUE(r.volumes[0].volume.image.header().affine.isApprox(theirs.image.header().affine, 1e-7));
    ASSERT_EQ(r.volumes[0].volume.slice_timing_s.size(), 18u);
    for (size_t k = 0; k < 18; ++k) {
      EXPECT_NEAR(r.volumes[0].volume.slice_timing_s[k], theirs.slice_timing_s[k], 1e-9);
    }
  }
}

TEST_F(CsaInput, MalformedCsaHeadersAreRefusedNotAborted) {
  const std::string good = csa_header(entries(6));
  const size_t first_item = 16 + 84;  // the first element's first item
  const auto patched = [&](size_t at, std::initializer_list<int32_t> values) {
    std::string out = good;
    std::string bytes;
    for (const int32_t v : values) put_i32(bytes, v);
    out.replace(at, bytes.size(), bytes);
    return out;
  };
  std::vector<CsaEntry> odd = entries(6), seven = entries(6), vr3 = entries(6), unmapped = entries(6),
                        mismatched = entries(6);
  for (CsaEntry& e : odd) e.items = std::max<int32_t>(1, static_cast<int32_t>(e.values.size()));  // 1, 3, 18
  seven[0].items = 7;
  vr3[1].vr = "FDX";
  unmapped[0].syngo_dt = 99;
  mismatched[0].syngo_dt = 4;  // FD, but the VR says US
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"one_item", csa_header(odd)},
      {"seven_items", csa_header(seven)},
      {"vr_of_3", csa_header(vr3)},
      {"unmapped_syngo_dt", csa_header(unmapped)},
      {"syngo_dt_vr_mismatch", csa_header(mismatched)},
      {"50_elements", patched(8, {50})},
      {"element_marker_0", patched(16 + 80, {0})},
      {"item_marker_0", patched(first_item + 8, {0})},
      {"item_lengths_disagree", patched(first_item, {5})},
      {"item_past_the_end", patched(first_item, {100000, 100000, 77, 100000})},
      {"item_length_minus_1", patched(first_item, {-1, -1, 77, -1})},
      {"no_04030201", patched(4, {0})},
      {"cut_short", good.substr(0, 150)},
      {"zeros", std::string(64, '\0')},
      {"dataset_form", std::string(2, '\0') + std::string(62, '\x11')},
      {"no_magic", std::string("\x05\x07", 2) + std::string(62, '\x11')},
  };
  for (const auto& [name, csa] : cases) {
    SCOPED_TRACE(name);
    const fs::path file = with_csa(csa, "csa_" + name);
    const AddResult r = add_between(file);
    EXPECT_EQ(r.status, Status::kSkipped);
    EXPECT_TRUE(mentions(r, file.string() + ": a MOSAIC image with a malformed Siemens CSA image header (0029,1010)"))
        << r.reason;
    EXPECT_TRUE(mentions(r, "its slices cannot be unpacked")) << r.reason;
    // GDCM's image reader (the pixels) does not read the CSA header: it decodes such a file.
    EXPECT_EQ(read_dicom_pixels(file).values, read_dicom_pixels(mosaics_[2]).values);
  }
  const fs::path one_item = work_ / "csa_one_item.dcm";
  const AddResult r = add_between(one_item);
  EXPECT_TRUE(mentions(r, "element 1 ('NumberOfImagesInMosaic', byte 16): 1 items, not a multiple of 6")) << r.reason;

  // Outside a mosaic a malformed CSA header is ignored: the rest of the header is read.
  Bytes bytes = bytes_of(with_csa(csa_header(seven), "not_mosaic"));
  const auto image_type = find_element(bytes, 0x0008, 0x0008);
  const std::string type = value_of(bytes, *image_type);
  ASSERT_NE(type.find("MOSAIC"), std::string::npos);
  std::memcpy(&bytes[image_type->value + type.find("MOSAIC")], "MOSAIX", 6);
  const fs::path not_mosaic = work_ / "not_mosaic.dcm";
  write_file(not_mosaic, bytes);
  const DicomHeader h = read_dicom_header(not_mosaic);
  EXPECT_EQ(h.mosaic_slices, 0);
  EXPECT_EQ(h.series_number, 13);
}

// The real CSA header with random bytes changed: read_dicom_header returns or throws DicomError, never aborts.
TEST_F(CsaInput, MutatedCsaHeadersNeverAbort) {
  const auto csa = find_element(original_, 0x0029, 0x1010);
  ASSERT_TRUE(csa);
  const std::string real = value_of(original_, *csa);
  std::mt19937 rng(test::test_seed());
  int read = 0, refused = 0;
  for (int k = 0; k < 300; ++k) {
    std::string mutated = real;
    const int changes = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int c = 0; c < changes; ++c) {
      // Mostly the structure's own fields (the first few hundred bytes), sometimes anywhere.
      const size_t limit = k % 2 == 0 ? std::min<size_t>(mutated.size(), 600) : mutated.size();
      mutated[std::uniform_int_distribution<size_t>(0, limit - 1)(rng)] = static_cast<char>(rng());
    }
    const fs::path file = with_csa(mutated, "csa_mutated");
    try {
      read_dicom_header(file);
      ++read;
    } catch (const DicomError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
  }
  std::cout << "mutated CSA headers: " << read << " read, " << refused << " refused\n";
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace rtf::dicom
