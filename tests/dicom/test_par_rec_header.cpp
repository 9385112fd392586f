// ctest-label: unit
// The PAR parser (core/dicom/par_rec_header.hpp) on hand-written PAR text: V4.2, V4.1 and V4 column layouts (the same
// values land in the same fields, the newer columns only where the version has them), version inferred from the
// column count when the version line is absent, general information with blank XTC fields, and clear errors naming the
// line for a bad number, a short image line, a stray line, an unsupported version.
#include <gtest/gtest.h>

#include <string>

#include "core/dicom/par_rec_header.hpp"

namespace rtf::dicom {
namespace {

// General information as the XTC export writes it (blank patient position, empty names), plus a version line.
std::string general_info(const std::string& version) {
  std::string text =
      "# === DATA DESCRIPTION FILE ======================================================\n"
      "#\n";
  if (!version.empty()) text += "# CLINICAL TRYOUT             Research image export tool     " + version + "\n";
  text +=
      "#\n"
      "# === GENERAL INFORMATION ========================================================\n"
      "#\n"
      ".    Patient name                       :   \n"
      ".    Examination date/time              :   2014.02.14 / 09:00:57\n"
      ".    Series Type                        :   Image   MRSERIES\n"
      ".    Acquisition nr                     :   7\n"
      ".    Max. number of slices/locations    :   2\n"
      ".    Max. number of dynamics            :   1\n"
      ".    Patient position                   :   Head First Supine\n"
      ".    Preparation direction              :   \n"
      ".    Scan resolution  (x, y)            :   64  62\n"
      ".    Repetition time [ms]               :   2000.000  \n"
      ".    FOV (ap,fh,rl) [mm]                :   240.000  120.000  230.000\n"
      ".    Angulation midslice(ap,fh,rl)[degr]:   -1.300  -3.900  -0.100\n"
      ".    Off Centre midslice(ap,fh,rl) [mm] :   -15.800  42.250  1.050\n"
      ".    Dynamic scan      <0=no 1=yes> ?   :   1\n"
      ".    Diffusion         <0=no 1=yes> ?   :   0\n"
      "#\n"
      "# === IMAGE INFORMATION ==========================================================\n";
  return text;
}

// The first 41 numbers (V4's columns) of two image lines: slices 1 and 2, type 16, REC indices 3 and 4.
const std::string kV4Slice1 =
    "1 1 1 0 16 0 3 16 100 64 62 -3142 1.5345 651.7395 -2374.7 767.3 -1.3 -3.9 -0.1 -15.8 14.3 1.7 4 0.5 0 1 0 0 "
    "3.75 3.5 25.0 0.25 0 0 1 79 0 0 0 0 0";
const std::string kV4Slice2 =
    "2 1 1 0 16 0 4 16 100 64 62 0 0.4884 0.00606 244.2 244.2 -1.3 -3.9 -0.1 -15.8 18.3 1.6 4 0.5 0 1 0 0 "
    "3.75 3.5 25.0 0.25 0 0 1 79 0 0 0 0 0";
// V4.1 adds b value number, gradient orientation number, contrast type, anisotropy type, diffusion (ap fh rl).
const std::string kV41Extra = " 2 5 11 0 0.5 -0.25 0.75";

std::string end_marker() {
  return "\n# === END OF DATA DESCRIPTION FILE ===============================================\n";
}

void expect_v4_columns(const ParImage& im) {
  EXPECT_EQ(im.slice, 1);
  EXPECT_EQ(im.echo, 1);
  EXPECT_EQ(im.dynamic, 1);
  EXPECT_EQ(im.cardiac_phase, 0);
  EXPECT_EQ(im.image_type, 16);
  EXPECT_EQ(im.index_in_rec, 3);
  EXPECT_EQ(im.pixel_bits, 16);
  EXPECT_EQ(im.scan_percentage, 100);
  EXPECT_EQ(im.recon_resolution, (std::array<int, 2>{64, 62}));
  EXPECT_DOUBLE_EQ(im.rescale_intercept, -3142);
  EXPECT_DOUBLE_EQ(im.rescale_slope, 1.5345);
  EXPECT_DOUBLE_EQ(im.scale_slope, 651.7395);
  EXPECT_DOUBLE_EQ(im.window_centre, -2374.7);
  EXPECT_EQ(im.angulation_deg, (std::array<double, 3>{-1.3, -3.9, -0.1}));
  EXPECT_EQ(im.offcentre_mm, (std::array<double, 3>{-15.8, 14.3, 1.7}));
  EXPECT_DOUBLE_EQ(im.slice_thickness_mm, 4);
  EXPECT_DOUBLE_EQ(im.slice_gap_mm, 0.5);
  EXPECT_EQ(im.slice_orientation, 1);
  EXPECT_EQ(im.pixel_spacing_mm, (std::array<double, 2>{3.75, 3.5}));
  EXPECT_DOUBLE_EQ(im.echo_time_ms, 25.0);
  EXPECT_DOUBLE_EQ(im.dynamic_begin_time_s, 0.25);
  EXPECT_EQ(im.averages, 1);
  EXPECT_DOUBLE_EQ(im.flip_angle_deg, 79);
  // DV = PV * RS + RI, FP = DV / (RS * SS)
  EXPECT_DOUBLE_EQ(im.display_value(100), 100 * 1.5345 - 3142);
  EXPECT_DOUBLE_EQ(im.floating_point_value(100), (100 * 1.5345 - 3142) / (1.5345 * 651.7395));
}

TEST(ParRecHeader, ReadsV42GeneralInformationAndImageLines) {
  const std::string text =
      general_info("V4.2") + "\n" + kV4Slice1 + kV41Extra + " 3\n" + kV4Slice2 + kV41Extra + " 1\n" + end_marker();
  const ParHeader h = parse_par(text);
  EXPECT_EQ(h.version, ParVersion::kV42);
  EXPECT_FALSE(h.version_from_columns);
  EXPECT_TRUE(h.complete);
  const ParGeneralInfo& g = h.general;
  EXPECT_EQ(g.patient_name, "");
  EXPECT_EQ(g.examination_date_time, "2014.02.14 / 09:00:57");
  EXPECT_EQ(g.series_type, "Image MRSERIES");
  EXPECT_EQ(g.acquisition_nr, 7);
  EXPECT_EQ(g.max_slices, 2);
  EXPECT_EQ(g.patient_position, "Head First Supine");
  EXPECT_EQ(g.preparation_direction, "");
  EXPECT_EQ(g.scan_resolution, (std::array<int, 2>{64, 62}));
  ASSERT_EQ(g.repetition_time_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(g.repetition_time_ms[0], 2000.0);
  EXPECT_EQ(g.fov_mm, (std::array<double, 3>{240, 120, 230}));
  EXPECT_EQ(g.angulation_deg, (std::array<double, 3>{-1.3, -3.9, -0.1}));
  EXPECT_EQ(g.off_centre_mm, (std::array<double, 3>{-15.8, 42.25, 1.05}));
  EXPECT_EQ(g.dynamic_scan, true);
  EXPECT_EQ(g.diffusion, false);
  EXPECT_FALSE(g.max_echoes.has_value()) << "absent fields stay unset";
  EXPECT_EQ(g.fields.at("Max. number of slices/locations"), "2");

  ASSERT_EQ(h.images.size(), 2u);
  expect_v4_columns(h.images[0]);
  EXPECT_EQ(h.images[0].line, 25);  // after a blank line 24
  EXPECT_EQ(h.images[0].b_value_number, 2);
  EXPECT_EQ(h.images[0].gradient_orientation_number, 5);
  EXPECT_EQ(h.images[0].contrast_type, "11");
  EXPECT_EQ(h.images[0].diffusion, (std::array<double, 3>{0.5, -0.25, 0.75}));
  EXPECT_EQ(h.images[0].label_type, 3);
  EXPECT_EQ(h.images[1].slice, 2);
  EXPECT_EQ(h.images[1].label_type, 1);
}

TEST(ParRecHeader, V41HasNoLabelTypeColumn) {
  const std::string text = general_info("V4.1") + kV4Slice1 + kV41Extra + "\n" + end_marker();
  const ParHeader h = parse_par(text);
  EXPECT_EQ(h.version, ParVersion::kV41);
  ASSERT_EQ(h.images.size(), 1u);
  expect_v4_columns(h.images[0]);
  EXPECT_EQ(h.images[0].gradient_orientation_number, 5);
  EXPECT_EQ(h.images[0].diffusion, (std::array<double, 3>{0.5, -0.25, 0.75}));
  EXPECT_EQ(h.images[0].label_type, 0);
  // A V4.2 line (49 values) in a V4.1 file is an error naming the line and both counts.
  try {
    parse_par(general_info("V4.1") + kV4Slice1 + kV41Extra + " 3\n", "x.PAR");
    FAIL() << "a 49-value line in a V4.1 PAR was accepted";
  } catch (const ParError& e) {
    EXPECT_EQ(e.line(), 24);
    EXPECT_NE(std::string(e.what()).find("49 values"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("V4.1 image line has 48"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.PAR: line 24"), std::string::npos) << e.what();
  }
}

TEST(ParRecHeader, V4HasNeitherDiffusionNorLabelColumns) {
  const ParHeader h = parse_par(general_info("V4") + kV4Slice1 + "\n" + kV4Slice2 + "\n" + end_marker());
  EXPECT_EQ(h.version, ParVersion::kV4);
  ASSERT_EQ(h.images.size(), 2u);
  expect_v4_columns(h.images[0]);
  EXPECT_EQ(h.images[0].gradient_orientation_number, 0);
  EXPECT_EQ(h.images[0].contrast_type, "");
  EXPECT_EQ(h.images[1].index_in_rec, 4);
}

TEST(ParRecHeader, InfersTheVersionFromTheColumnsWhenTheVersionLineIsMissing) {
  EXPECT_EQ(parse_par(general_info("") + kV4Slice1 + kV41Extra + " 3\n").version, ParVersion::kV42);
  EXPECT_EQ(parse_par(general_info("") + kV4Slice1 + kV41Extra + "\n").version, ParVersion::kV41);
  const ParHeader v4 = parse_par(general_info("") + kV4Slice1 + "\n");
  EXPECT_EQ(v4.version, ParVersion::kV4);
  EXPECT_TRUE(v4.version_from_columns);
  EXPECT_FALSE(v4.complete) << "no END OF DATA DESCRIPTION FILE line";
  EXPECT_THROW(parse_par(general_info("") + "1 2 3\n"), ParError);
  EXPECT_THROW(parse_par(general_info("")), ParError) << "no version and no image lines";
}

TEST(ParRecHeader, RejectsOldAndUnknownVersions) {
  try {
    parse_par(general_info("V3") + kV4Slice1 + "\n");
    FAIL() << "V3 accepted";
  } catch (const ParError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("'3' is not supported"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_par(general_info("V5.0") + kV4Slice1 + "\n"), ParError);
}

TEST(ParRecHeader, NamesTheLineAndColumnOfABadNumber) {
  std::string bad = kV4Slice1;
  bad.replace(bad.find("651.7395"), 8, "651.7x95");
  try {
    parse_par(general_info("V4") + bad + "\n", "Dump-0001.par");
    FAIL() << "a bad scale slope was accepted";
  } catch (const ParError& e) {
    EXPECT_EQ(e.source(), "Dump-0001.par");
    EXPECT_EQ(e.line(), 24);
    EXPECT_NE(std::string(e.what()).find("column 14 (scale slope): '651.7x95'"), std::string::npos) << e.what();
  }
  std::string fraction = kV4Slice1;
  fraction.replace(0, 1, "1.5");  // slice number 1.5
  EXPECT_THROW(parse_par(general_info("V4") + fraction + "\n"), ParError);
  std::string zero = kV4Slice1;
  zero.replace(0, 1, "0");  // slices count from 1
  EXPECT_THROW(parse_par(general_info("V4") + zero + "\n"), ParError);
}

TEST(ParRecHeader, RejectsMalformedGeneralInformationAndStrayLines) {
  std::string no_colon = general_info("V4");
  no_colon.replace(no_colon.find("Acquisition nr                     :"), 37, "Acquisition nr                      ");
  try {
    parse_par(no_colon + kV4Slice1 + "\n");
    FAIL() << "general information without ':' accepted";
  } catch (const ParError& e) {
    EXPECT_EQ(e.line(), 10);
    EXPECT_NE(std::string(e.what()).find("without ':'"), std::string::npos) << e.what();
  }
  std::string bad_fov = general_info("V4");
  bad_fov.replace(bad_fov.find("240.000  120.000  230.000"), 25, "240.000  120.000");
  EXPECT_THROW(parse_par(bad_fov + kV4Slice1 + "\n"), ParError) << "FOV with two numbers";
  std::string bad_tr = general_info("V4");
  bad_tr.replace(bad_tr.find("2000.000"), 8, "two_secs");
  EXPECT_THROW(parse_par(bad_tr + kV4Slice1 + "\n"), ParError);
  try {
    parse_par(general_info("V4") + kV4Slice1 + "\nhello world\n");
    FAIL() << "stray line accepted";
  } catch (const ParError& e) {
    EXPECT_EQ(e.line(), 25);
  }
}

TEST(ParRecHeader, AcceptsCrLfLineEndsAndReadsTheRealDumpsLayout) {
  std::string text = general_info("V4.2") + kV4Slice1 + kV41Extra + " 3\n" + end_marker();
  std::string crlf;
  for (const char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const ParHeader h = parse_par(crlf);
  ASSERT_EQ(h.images.size(), 1u);
  expect_v4_columns(h.images[0]);
  EXPECT_EQ(h.general.patient_position, "Head First Supine");
}

}  // namespace
}  // namespace rtf::dicom
