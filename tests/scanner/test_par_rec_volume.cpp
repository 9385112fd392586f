// ctest-label: e2e
// Volumes from real Philips XTC PAR/REC dumps (scanner/assemble/par_rec_volume.hpp; pyneal's example in
// scanner/pyneal_Philips of the extra data, PAR V4.2, two image types per volume) against dcm2niix run by the test on
// copies: each of the 4 volumes, magnitude (type 16, per-slice scaling: float32 DV) and phase (type 17, one scaling:
// int16 with FP slope/intercept), equals dcm2niix's NIfTI voxel for voxel and its affine within 1e-4 mm; the same for
// edited copies that reach the geometry's other branches (sagittal, coronal, reversed slice numbers, V4 and V4.1
// columns, a stack offcentre that is not 0). A REC cut short, a missing REC, a PAR without its end line are
// ParRecIncomplete (a watcher waits for them); a REC too long is a plain ParError. Skipped where dcm2niix or the
// data are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/par_rec_volume.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/dcm2niix.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;

const std::string kFolder = "scanner/pyneal_Philips/funcData/0001";

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_all(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out << bytes;
}

std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_image_line(const std::string& line) {
  return !line.empty() && std::isdigit(static_cast<unsigned char>(line.front())) && split(line).size() > 40;
}

using LineEdit = std::function<void(std::vector<std::string>&)>;
using TextEdit = std::function<void(std::string&)>;

// dcm2niix refuses these dumps as they are: two image types (16 and 17, both unknown to it) in one PAR ("Catastrophic
// error: found 15 but expected 30 slices"). It converts a copy holding one type: the other type's image lines are
// dropped from the PAR, and since dcm2niix reads the REC's images in the order of the PAR's lines (it ignores the
// "index in REC" column), the kept images are copied into a new REC in that order and the column renumbered to match
// (so the copy is a valid pair for our reader too). `edit` may change each kept line's values, `edit_text` the rest.
fs::path write_one_type(const fs::path& par, const fs::path& dir, int type, const LineEdit& edit = {},
                        const TextEdit& edit_text = {}, bool reverse_lines = false) {
  fs::create_directories(dir);
  const std::string rec = read_all(rec_path_for(par));
  const size_t image_bytes = 80 * 80 * 2;
  std::istringstream lines(read_all(par));
  std::string before, after;
  std::vector<std::pair<std::vector<std::string>, std::string>> kept;  // values, REC image
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!is_image_line(line)) {
      (kept.empty() ? before : after) += line + "\n";
      continue;
    }
    std::vector<std::string> v = split(line);
    if (std::stoi(v[4]) != type) continue;
    kept.emplace_back(v, rec.substr(static_cast<size_t>(std::stoi(v[6])) * image_bytes, image_bytes));
  }
  if (reverse_lines) std::reverse(kept.begin(), kept.end());
  std::string text = before, images;
  for (size_t i = 0; i < kept.size(); ++i) {
    std::vector<std::string>& v = kept[i].first;
    v[6] = std::to_string(i);
    images += kept[i].second;
    if (edit) edit(v);
    std::string line;
    for (const std::string& w : v) line += (line.empty() ? "" : " ") + w;
    text += line + "\n";
  }
  text += after;
  if (edit_text) edit_text(text);
  const fs::path out = dir / par.filename();
  write_all(out, text);
  write_all(rec_path_for(out), images);
  return out;
}

// pixdim[4] of a NIfTI-1 file (dcm2niix writes the TR there even for one volume, which read_nifti drops).
float nifti_pixdim4(const fs::path& file) {
  const std::string bytes = read_all(file);
  float value = 0;
  if (bytes.size() >= 96) std::memcpy(&value, bytes.data() + 92, sizeof value);
  return value;
}

// dcm2niix's NIfTI of one PAR (it names the file itself: the folder's only .nii).
fs::path dcm2niix_nii(const fs::path& par, const fs::path& out) {
  fs::create_directories(out);
  const std::string command =
      "dcm2niix -z n -b n -f converted -o '" + out.string() + "' '" + par.string() + "' >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".nii") return entry.path();
  }
  ADD_FAILURE() << "dcm2niix wrote no NIfTI for " << par;
  return {};
}

Image dcm2niix_of(const fs::path& par, const fs::path& out) {
  const fs::path nii = dcm2niix_nii(par, out);
  return nii.empty() ? Image() : read_nifti(nii);
}

void expect_same(const Image& mine, const Image& theirs, const std::string& what) {
  ASSERT_EQ(mine.header().dims, theirs.header().dims) << what;
  ASSERT_EQ(theirs.nt(), 1) << what;
  int64_t differ = 0;
  size_t first = 0;
  for (size_t i = 0; i < theirs.data().size(); ++i) {
    if (mine.data()[i] != theirs.data()[i] && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0) << what << ": voxels that differ from dcm2niix's, first at " << first << ": "
                       << mine.data()[first] << " vs " << theirs.data()[first];
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(mine.header().affine(r, c), theirs.header().affine(r, c), 1e-4)
          << what << ": affine " << r << ", " << c;
    }
  }
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(mine.header().voxel_mm[static_cast<size_t>(c)], theirs.header().voxel_mm[static_cast<size_t>(c)], 1e-5)
        << what;
  }
}

TEST(ParRecVolume, RealXtcDumpsEqualDcm2niixForBothImageTypes) {
  const auto first = test::extra_data(kFolder + "/Dump-0000.par");
  if (!first) GTEST_SKIP() << test::missing_extra_data(kFolder + "/Dump-0000.par");
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  for (int n = 0; n < 4; ++n) {
    const std::string name = "Dump-000" + std::to_string(n);
    const fs::path par = work / (name + ".par");
    fs::copy_file(first->parent_path() / (name + ".par"), par);
    fs::copy_file(first->parent_path() / (name + ".rec"), work / (name + ".rec"));
    // The dump itself, both types in it: the default keeps type 16, the magnitude (no type 0 here; type 17's
    // intercept of -3142 = -1000 pi and FP range of +-pi make it the phase).
    const DicomVolume magnitude = par_rec_volume(par);
    EXPECT_EQ(default_image_type(read_par(par)), 16);
    EXPECT_TRUE(magnitude.slice_timing_s.empty());
    EXPECT_DOUBLE_EQ(magnitude.image.header().tr_s, 0.001) << "the dumps' 'Repetition time [ms] : 1'";
    EXPECT_EQ(magnitude.image.header().source_type, DataType::kFloat32) << "RS and SS vary between type 16's slices";
    for (const int type : {16, 17}) {
      const std::string what = name + " type " + std::to_string(type);
      const fs::path one = write_one_type(par, work / (name + "_" + std::to_string(type)), type);
      const fs::path nii = dcm2niix_nii(one, work / (name + "_" + std::to_string(type) + "_out"));
      ASSERT_FALSE(nii.empty());
      const Image theirs = read_nifti(nii);
      const DicomVolume mine = par_rec_volume(par, {.image_type = type});
      expect_same(mine.image, theirs, what);
      EXPECT_FLOAT_EQ(static_cast<float>(mine.image.header().tr_s), nifti_pixdim4(nii)) << what;
      expect_same(par_rec_volume(one).image, theirs, what + " (one-type copy)");
    }
    expect_same(magnitude.image, par_rec_volume(par, {.image_type = 16}).image, name + " default type");
  }
}

TEST(ParRecVolume, ScalingChoices) {
  const auto par = test::extra_data(kFolder + "/Dump-0002.par");
  if (!par) GTEST_SKIP() << test::missing_extra_data(kFolder + "/Dump-0002.par");
  const ParHeader h = read_par(*par);
  const std::string rec = read_all(rec_path_for(*par));
  // Type 17, slice 1, NIfTI voxel (x 40, y 79 - row 40): PV from the REC by hand.
  const ParImage* slice1 = nullptr;
  for (const ParImage& im : h.images) slice1 = (im.image_type == 17 && im.slice == 1) ? &im : slice1;
  ASSERT_NE(slice1, nullptr);
  const size_t at = static_cast<size_t>(slice1->index_in_rec) * 6400 + 40 * 80 + 40;
  const double pv = static_cast<unsigned char>(rec[2 * at]) + 256.0 * static_cast<unsigned char>(rec[2 * at + 1]);
  const double dv = pv * slice1->rescale_slope + slice1->rescale_intercept;
  const double fp = dv / (slice1->rescale_slope * slice1->scale_slope);
  const auto voxel = [&](ParScaling s) { return par_rec_volume(*par, {17, s}).image.at(40, 39, 0); };
  EXPECT_FLOAT_EQ(voxel(ParScaling::kDisplayValue), static_cast<float>(dv));
  EXPECT_FLOAT_EQ(voxel(ParScaling::kFloatingPoint), static_cast<float>(fp));
  EXPECT_GE(fp, -3.1416);
  EXPECT_LE(fp, 3.1416);
  // dcm2niix's int16 + float32 slope FP(1) - FP(0): FP(0) and FP(1) are near -pi, rounded to float (half a step of
  // 2.4e-7 each), so the slope is off by up to 2.4e-7 and the value by up to PV times that.
  EXPECT_NEAR(voxel(ParScaling::kAsDcm2niix), fp, 2.4e-7 * pv + 1e-6);
  EXPECT_NE(voxel(ParScaling::kAsDcm2niix), static_cast<float>(fp)) << "PV " << pv;
}

TEST(ParRecVolume, EditedGeometriesEqualDcm2niix) {
  const auto first = test::extra_data(kFolder + "/Dump-0001.par");
  if (!first) GTEST_SKIP() << test::missing_extra_data(kFolder + "/Dump-0001.par");
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  const auto set_column = [](int column, const std::string& value) {
    return [=](std::vector<std::string>& v) { v[static_cast<size_t>(column)] = value; };
  };
  const auto replace = [](const std::string& from, const std::string& to) {
    return [=](std::string& text) {
      const size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    };
  };
  // Slice k becomes 16 - k (with the lines reversed too, slice 1 stays first in the file, as Philips writes it).
  const LineEdit reverse_slice_numbers = [](std::vector<std::string>& v) {
    v[0] = std::to_string(16 - std::stoi(v[0]));
  };
  const std::string centre = "Off Centre midslice(ap,fh,rl) [mm] :   0  0  0";
  struct Variant {
    std::string name;
    LineEdit line;
    TextEdit text;
    bool reverse_lines = false;
  };
  const std::vector<Variant> variants = {
      {"sagittal", set_column(25, "2"), {}},
      {"coronal", set_column(25, "3"), {}},
      {"reversed slice numbers", reverse_slice_numbers, {}, true},
      {"angulated sagittal",
       [](std::vector<std::string>& v) {
         v[25] = "2";
         v[16] = "12.5";
         v[17] = "-20";
         v[18] = "7.25";
       },
       {}},
      {"angulated coronal, reversed",
       [](std::vector<std::string>& v) {
         v[25] = "3";
         v[16] = "-8";
         v[17] = "15";
         v[18] = "30";
         v[0] = std::to_string(16 - std::stoi(v[0]));
       },
       {},
       true},
      {"sagittal, reversed",
       [&](std::vector<std::string>& v) {
         reverse_slice_numbers(v);
         v[25] = "2";
       },
       {},
       true},
      {"coronal, ap offcentre rising with slice number",
       [](std::vector<std::string>& v) {
         v[25] = "3";
         v[19] = std::to_string(-40 + 4 * std::stoi(v[0]));
       },
       {}},
      {"coronal, ap offcentre falling with slice number",
       [&](std::vector<std::string>& v) {
         reverse_slice_numbers(v);
         v[25] = "3";
         v[19] = std::to_string(40 - 4 * std::stoi(v[0]));
       },
       {},
       true},
      {"V4.1 columns", [](std::vector<std::string>& v) { v.resize(48); }, replace("tool     V4.2", "tool     V4.1")},
      {"V4 columns", [](std::vector<std::string>& v) { v.resize(41); }, replace("tool     V4.2", "tool     V4")},
      {"stack offcentre", {}, replace(centre, "Off Centre midslice(ap,fh,rl) [mm] :   -15.8  42.25  1.05")},
      {"offcentre in rl, ap, fh order",
       {},
       replace(centre, "Off Centre midslice(ap,fh,rl) [mm] :   42.25  1.05 -15.8")},
      {"thickness + gap matches the positions", set_column(22, "3.99393653869629"), {}},
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    for (const int type : {16, 17}) {
      const std::string what = v.name + ", type " + std::to_string(type);
      const fs::path dir = work / ("v" + std::to_string(i) + "_" + std::to_string(type));
      const fs::path par = write_one_type(*first, dir / "in", type, v.line, v.text, v.reverse_lines);
      const Image theirs = dcm2niix_of(par, dir / "out");
      expect_same(par_rec_volume(par).image, theirs, what);
    }
  }
  // Image lines in descending slice order (dcm2niix makes a slice spacing of 0 of them): the same volume as the
  // ascending file describing the same slices.
  const fs::path ascending = write_one_type(*first, work / "ascending", 16, reverse_slice_numbers, {}, true);
  const fs::path descending = write_one_type(*first, work / "descending", 16, reverse_slice_numbers, {}, false);
  const Image a = par_rec_volume(ascending).image, d = par_rec_volume(descending).image;
  EXPECT_EQ(a.data(), d.data());
  EXPECT_TRUE(a.header().affine.isApprox(d.header().affine, 1e-12)) << a.header().affine << "\n" << d.header().affine;
}

TEST(ParRecVolume, HalfWrittenPairsAreIncomplete) {
  const auto first = test::extra_data(kFolder + "/Dump-0003.par");
  if (!first) GTEST_SKIP() << test::missing_extra_data(kFolder + "/Dump-0003.par");
  const test::TempDir work;
  const fs::path par = work / "Dump-0003.par", rec = work / "Dump-0003.rec";
  fs::copy_file(*first, par);
  const std::string rec_bytes = read_all(rec_path_for(*first));
  ASSERT_EQ(rec_bytes.size(), 384000u);

  try {  // no REC yet
    par_rec_volume(par);
    FAIL() << "no REC accepted";
  } catch (const ParRecIncomplete& e) {
    EXPECT_EQ(e.expected_bytes(), 384000u);
    EXPECT_EQ(e.actual_bytes(), 0u);
  }
  write_all(rec, rec_bytes.substr(0, 200000));  // REC half written
  try {
    par_rec_volume(par);
    FAIL() << "short REC accepted";
  } catch (const ParRecIncomplete& e) {
    EXPECT_EQ(e.expected_bytes(), 384000u);
    EXPECT_EQ(e.actual_bytes(), 200000u);
    EXPECT_NE(std::string(e.what()).find("Dump-0003.rec"), std::string::npos) << e.what();
  }
  write_all(rec, rec_bytes + "extra");  // not this PAR's REC
  try {
    par_rec_volume(par);
    FAIL() << "long REC accepted";
  } catch (const ParRecIncomplete&) {
    FAIL() << "a REC that is too long is not a half-written one";
  } catch (const ParError& e) {
    EXPECT_NE(std::string(e.what()).find("384005 bytes"), std::string::npos) << e.what();
  }
  write_all(rec, rec_bytes);
  EXPECT_EQ(par_rec_volume(par).image.nz(), 15);
  const std::string text = read_all(par);
  write_all(par, text.substr(0, text.size() * 3 / 4));  // PAR half written: cut inside an image line
  EXPECT_THROW(par_rec_volume(par), ParRecIncomplete);
  write_all(par, text);
  EXPECT_THROW(par_rec_volume(par, {.image_type = 3}), ParError) << "no type-3 images";
  fs::remove(par);
  EXPECT_THROW(par_rec_volume(par), ParRecIncomplete) << "PAR not there yet";
}

}  // namespace
}  // namespace rtf::dicom
