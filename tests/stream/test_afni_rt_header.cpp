// ctest-label: unit
// AFNI real-time header commands -> geometry. Expectations come from AFNI's own documents, not from our arithmetic:
// README.realtime's sample header (an S-I A-P L-R sagittal 64x64x16 stack, centred about 0, FOV / matrix voxel
// sizes), ZFIRST/XYZFIRST distances toward a direction letter, the AFNI tutorial's slice offsets for 33 alt+z slices
// at TR 2 s (0.000 1.030 0.061 1.091 ...), and the header Dimon writes (realtime.c: 3D+timing, explicit TPATTERN in
// seconds, OBLIQUE_XFORM = ijk -> DICOM LPS, DRIVE_AFNI and NOTE lines). Every command is exercised; every kind of
// bad input gives the error code and names the command.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "stream/afni/afni_rt_header.hpp"

namespace rtf::stream::afni {
namespace {

using Mat = std::array<std::array<double, 4>, 4>;

// RAS position of voxel (i, j, k).
std::array<double, 3> ras(const AfniRtHeader& h, double i, double j, double k) {
  std::array<double, 3> p{};
  for (size_t r = 0; r < 3; ++r) p[r] = h.affine[r][0] * i + h.affine[r][1] * j + h.affine[r][2] * k + h.affine[r][3];
  return p;
}

AfniRtHeader parse_ok(const std::string& text) {
  auto parsed = parse_afni_rt_header(text);
  EXPECT_TRUE(parsed.ok()) << parsed.error.reason;
  return parsed.ok() ? *parsed.value : AfniRtHeader{};
}

// README.realtime's sample, verbatim.
constexpr const char* kReadmeSample =
    "   ACQUISITION_TYPE 2D+zt\n"
    "   TR 5.0\n"
    "   XYFOV 240.0 240.0 112.0\n"
    "   ZNUM 16\n"
    "   XYZAXES S-I A-P L-R\n"
    "   DATUM short\n"
    "   XYMATRIX 64 64\n";

TEST(AfniRtHeader, ReadmeSampleIsACentredSagittalStack) {
  const AfniRtHeader h = parse_ok(kReadmeSample);
  EXPECT_EQ(h.acquisition, AcquisitionType::k2DZT);
  EXPECT_EQ(h.dims, (std::array<int64_t, 3>{64, 64, 16}));
  EXPECT_DOUBLE_EQ(h.voxel_mm[0], 3.75);
  EXPECT_DOUBLE_EQ(h.voxel_mm[1], 3.75);
  EXPECT_DOUBLE_EQ(h.voxel_mm[2], 7.0);
  EXPECT_EQ(h.datatype, DataType::kInt16);
  EXPECT_DOUBLE_EQ(h.tr_s, 5.0);
  EXPECT_FALSE(h.tr_defaulted);
  EXPECT_FALSE(h.oblique);
  // "If not given, then the volume will be centered about z=0 (which is what always happens for the x- and y-axes)."
  const auto centre = ras(h, 31.5, 31.5, 7.5);
  for (double c : centre) EXPECT_NEAR(c, 0.0, 1e-9);
  // i runs superior -> inferior, j anterior -> posterior, k left -> right, in RAS+.
  EXPECT_DOUBLE_EQ(h.affine[2][0], -3.75);
  EXPECT_DOUBLE_EQ(h.affine[1][1], -3.75);
  EXPECT_DOUBLE_EQ(h.affine[0][2], 7.0);
  for (auto [r, c] : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {2, 1}, {1, 2}, {2, 2}}) {
    EXPECT_EQ(h.affine[r][c], 0.0) << r << "," << c;
  }
  // One slice per image; ZORDER's default is alt, so the timing is alternating over TR 5 s.
  EXPECT_TRUE(h.per_slice());
  EXPECT_EQ(h.image_bytes(), 64 * 64 * 2);
  EXPECT_EQ(h.volume_bytes(), 64 * 64 * 16 * 2);
  ASSERT_EQ(h.slice_timing_s.size(), 16u);
  EXPECT_DOUBLE_EQ(h.slice_timing_s[0], 0.0);
  EXPECT_DOUBLE_EQ(h.slice_timing_s[2], 5.0 / 16);
  EXPECT_DOUBLE_EQ(h.slice_timing_s[1], 8 * 5.0 / 16);
  EXPECT_DOUBLE_EQ(h.slice_timing_s[15], 15 * 5.0 / 16);
}

TEST(AfniRtHeader, AlternatingTimingIsTheAfniTutorials) {
  // AFNI_data6 FT_analysis tutorial (t10_tshift): 33 interleaved slices, TR 2 s, offsets of slices 0, 1, 2, ...
  const std::vector<double> tutorial{0.000, 1.030, 0.061, 1.091, 0.121, 1.152, 0.182, 1.212, 0.242, 1.273, 0.303,
                                     1.333, 0.364, 1.394, 0.424, 1.455, 0.485, 1.515, 0.545, 1.576, 0.606, 1.636,
                                     0.667, 1.697, 0.727, 1.758, 0.788, 1.818, 0.848, 1.879, 0.909, 1.939, 0.970};
  for (const char* order :
       {"ZORDER alt\nACQUISITION_TYPE 2D+zt\n", "ZORDER seq\nTPATTERN alt+z\nACQUISITION_TYPE 3D+timing\n"}) {
    const AfniRtHeader h =
        parse_ok(std::string(order) + "TR 2\nXYMATRIX 64 64 33\nXYFOV 240 240 99\nXYZAXES R-L A-P I-S\n");
    ASSERT_EQ(h.slice_timing_s.size(), tutorial.size()) << order;
    for (size_t k = 0; k < tutorial.size(); ++k) EXPECT_NEAR(h.slice_timing_s[k], tutorial[k], 0.0006) << order << k;
  }
}

TEST(AfniRtHeader, SlicePlacementFollowsZorder) {
  const std::string geometry = "XYFOV 20\nZDELTA 2\nXYZAXES R-L A-P I-S\nXYMATRIX 4 4 ";
  const AfniRtHeader alt5 = parse_ok(geometry + "5\n");
  EXPECT_EQ(alt5.zorder, SliceOrder::kAlternating);
  std::vector<int64_t> at;
  for (int64_t n = 0; n < 5; ++n) at.push_back(alt5.slice_position(n));
  EXPECT_EQ(at, (std::vector<int64_t>{0, 2, 4, 1, 3}));  // README: "1 3 5 7 9 2 4 6 8" (1-based)
  const AfniRtHeader alt4 = parse_ok(geometry + "4\n");
  at.clear();
  for (int64_t n = 0; n < 4; ++n) at.push_back(alt4.slice_position(n));
  EXPECT_EQ(at, (std::vector<int64_t>{0, 2, 1, 3}));
  const AfniRtHeader seq = parse_ok(geometry + "5\nZORDER seq\n");
  for (int64_t n = 0; n < 5; ++n) EXPECT_EQ(seq.slice_position(n), n);
  // Sequential order gives sequential timing (2D+zt).
  EXPECT_DOUBLE_EQ(seq.slice_timing_s[1], 0.2);
}

TEST(AfniRtHeader, FirstSliceDistancesTowardTheirLetters) {
  // rtfeedme writes "XYZFIRST %g%c ..." and Dimon "%f%c": the first voxel's centre lies that far toward the letter.
  const AfniRtHeader h = parse_ok(
      "XYMATRIX 64 64 33\nXYFOV 192 192 115.5\nXYZAXES R-L A-P I-S\nXYZFIRST 95.000000R 111.500000A 40.250000I\n");
  const auto first = ras(h, 0, 0, 0);
  EXPECT_DOUBLE_EQ(first[0], 95.0);        // right is +x in RAS
  EXPECT_DOUBLE_EQ(first[1], 111.5);       // anterior is +y
  EXPECT_DOUBLE_EQ(first[2], -40.25);      // inferior is -z
  EXPECT_DOUBLE_EQ(h.affine[0][0], -3.0);  // R-L: i runs toward the left
  EXPECT_DOUBLE_EQ(h.affine[1][1], -3.0);  // A-P
  EXPECT_DOUBLE_EQ(h.affine[2][2], 3.5);   // I-S, 115.5 mm / 33
  // The opposite letters, and ZFIRST alone for z.
  const AfniRtHeader o = parse_ok(
      "XYMATRIX 4 4 3\nXYFOV 8 8\nZDELTA 2\nXYZAXES L-R P-A S-I\nXYZFIRST 10L 20P 0S\n"
      "ZFIRST 30S\n");
  const auto p = ras(o, 0, 0, 0);
  EXPECT_DOUBLE_EQ(p[0], -10.0);
  EXPECT_DOUBLE_EQ(p[1], -20.0);
  EXPECT_DOUBLE_EQ(p[2], 30.0);
  EXPECT_DOUBLE_EQ(o.affine[0][0], 2.0);   // L-R: toward the right
  EXPECT_DOUBLE_EQ(o.affine[1][1], 2.0);   // P-A: toward anterior
  EXPECT_DOUBLE_EQ(o.affine[2][2], -2.0);  // S-I: toward inferior
  // Without letters, the distance is toward the side the axis starts from (Dimon's GE form "XYZFIRST %f %f %f").
  const AfniRtHeader n = parse_ok("XYMATRIX 4 4 3\nXYFOV 8 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nXYZFIRST 10 20 30\n");
  const auto q = ras(n, 0, 0, 0);
  EXPECT_DOUBLE_EQ(q[0], 10.0);   // R-L starts at the right
  EXPECT_DOUBLE_EQ(q[1], 20.0);   // A-P starts anterior
  EXPECT_DOUBLE_EQ(q[2], -30.0);  // I-S starts inferior
}

// What Dimon (realtime.c, ART_send_control_info) sends for an oblique Siemens mosaic, line for line.
std::string dimon_header(const std::string& times) {
  return "ACQUISITION_TYPE 3D+timing\n"
         "ZORDER seq\n"
         "TPATTERN explicit" +
         times +
         "\n"
         "TR 2.000000\n"
         "XYFOV 192.000000 192.000000 99.000000\n"
         "XYMATRIX 64 64 33\n"
         "DATUM short\n"
         "XYZAXES R-L A-P I-S\n"
         "XYZFIRST 95.000000R 111.500000A 40.250000I\n"
         "BYTEORDER LSB_FIRST\n"
         "OBLIQUE_XFORM 2.954423 0.000000 0.523526 -90.123001 0.000000 3.000000 0.000000 -110.500000 -0.520945 "
         "0.000000 2.969060 -35.000000 0.000000 0.000000 0.000000 1.000000\n"
         "DRIVE_AFNI OPEN_WINDOW axialimage\n"
         "DRIVE_AFNI OPEN_WINDOW axialgraph pinnum=120\n"
         "NOTE created remotely via real-time afni\f    starting with file : 'run1/im0001.dcm'\f    creation "
         "command   : Dimon -rt -infile_prefix run1/im\n";
}

std::string alt_times_text(int nz, double tr) {
  std::string s;
  const double frame = tr / nz;
  std::vector<double> t(nz);
  double at = 0;
  for (int k = 0; k < nz; k += 2, at += frame) t[k] = at;
  for (int k = 1; k < nz; k += 2, at += frame) t[k] = at;
  for (double v : t) s += " " + std::to_string(std::round(v * 1000) / 1000).substr(0, 5);
  return s;
}

TEST(AfniRtHeader, DimonObliqueHeader) {
  const AfniRtHeader h = parse_ok(dimon_header(alt_times_text(33, 2.0)));
  EXPECT_EQ(h.acquisition, AcquisitionType::k3DTiming);
  EXPECT_FALSE(h.per_slice());
  EXPECT_EQ(h.image_bytes(), 64 * 64 * 33 * 2);
  EXPECT_FALSE(h.big_endian);
  EXPECT_DOUBLE_EQ(h.tr_s, 2.0);
  ASSERT_TRUE(h.oblique);
  // OBLIQUE_XFORM maps ijk to DICOM (LPS) mm: RAS negates its first two rows.
  const Mat lps{{{2.954423, 0.0, 0.523526, -90.123001},
                 {0.0, 3.0, 0.0, -110.5},
                 {-0.520945, 0.0, 2.969060, -35.0},
                 {0.0, 0.0, 0.0, 1.0}}};
  for (size_t r = 0; r < 4; ++r) {
    for (size_t c = 0; c < 4; ++c) {
      const double want = r < 2 ? -lps[r][c] : lps[r][c];
      EXPECT_NEAR(h.affine[r][c], want, 1e-12) << r << "," << c;
    }
  }
  EXPECT_NEAR(h.voxel_mm[0], std::hypot(2.954423, 0.520945), 1e-9);
  EXPECT_NEAR(h.voxel_mm[1], 3.0, 1e-12);
  EXPECT_NEAR(h.voxel_mm[2], std::hypot(0.523526, 2.969060), 1e-9);
  EXPECT_TRUE(h.warnings.empty());  // its column lengths agree with XYFOV / XYMATRIX
  // Explicit times are seconds, kept as sent.
  ASSERT_EQ(h.slice_timing_s.size(), 33u);
  EXPECT_NEAR(h.slice_timing_s[1], 1.030, 1e-12);
  EXPECT_NEAR(h.slice_timing_s[32], 0.970, 1e-12);
  // DRIVE_AFNI twice and NOTE: accepted, listed for the log.
  ASSERT_EQ(h.ignored.size(), 3u);
  EXPECT_EQ(h.ignored[0], "DRIVE_AFNI OPEN_WINDOW axialimage");
  EXPECT_EQ(h.ignored[1], "DRIVE_AFNI OPEN_WINDOW axialgraph pinnum=120");
  EXPECT_EQ(h.ignored[2].rfind("NOTE created remotely", 0), 0u);
}

TEST(AfniRtHeader, ObliqueSizesThatDisagreeAreWarnedAbout) {
  const AfniRtHeader h = parse_ok(
      "XYMATRIX 4 4 3\nXYFOV 8 8\nZDELTA 2\nXYZAXES R-L A-P I-S\n"
      "OBLIQUE_XFORM 2 0 0 0 0 2 0 0 0 0 3 0 0 0 0 1\n");
  ASSERT_EQ(h.warnings.size(), 1u);
  EXPECT_NE(h.warnings[0].find("axis k"), std::string::npos);
  EXPECT_DOUBLE_EQ(h.voxel_mm[2], 3.0);
}

TEST(AfniRtHeader, EveryGeometryCommand) {
  // ZNUM over XYMATRIX's third value (last wins), square XYFOV / XYMATRIX, ZGAP added to FOV-derived spacing,
  // XYZOFF shifting the centre, NUM_CHAN, NUMVOL, DATUM / BYTEORDER.
  const AfniRtHeader h = parse_ok(
      "ACQUISITION_TYPE 3D+t\nXYMATRIX 8 0 3\nZNUM 5\nXYFOV 16 0 10\nZGAP 0.5\nXYZAXES RL AP IS\n"
      "XYZOFF 1 2 3\nDATUM float\nBYTEORDER MSB_FIRST\nNUM_CHAN 2\nNUMVOL 40\nTR 0.8\n");
  EXPECT_EQ(h.dims, (std::array<int64_t, 3>{8, 8, 5}));
  EXPECT_DOUBLE_EQ(h.voxel_mm[0], 2.0);
  EXPECT_DOUBLE_EQ(h.voxel_mm[1], 2.0);
  EXPECT_DOUBLE_EQ(h.voxel_mm[2], 2.5);  // 10 / 5 + 0.5
  // Centred, then offset by XYZOFF in the axis's own sense: x (R-L) and y (A-P) start from R and A.
  const auto c = ras(h, 3.5, 3.5, 2);
  EXPECT_NEAR(c[0], 1.0, 1e-12);
  EXPECT_NEAR(c[1], 2.0, 1e-12);
  EXPECT_NEAR(c[2], -3.0, 1e-12);
  EXPECT_EQ(h.datatype, DataType::kFloat32);
  EXPECT_TRUE(h.big_endian);
  EXPECT_EQ(h.num_channels, 2);
  EXPECT_EQ(h.num_volumes, std::optional<int64_t>(40));
  EXPECT_TRUE(h.slice_timing_s.empty());  // 3D+t: plug_realtime sets no slice offsets
  EXPECT_EQ(h.image_bytes(), 8 * 8 * 5 * 4);
  // Long axis names, ZDELTA when XYFOV has no third value, and every datum.
  for (const auto& [datum, type] : std::vector<std::pair<std::string, DataType>>{{"byte", DataType::kUint8},
                                                                                 {"short", DataType::kInt16},
                                                                                 {"int", DataType::kInt32},
                                                                                 {"float", DataType::kFloat32},
                                                                                 {"double", DataType::kFloat64}}) {
    const AfniRtHeader d = parse_ok("XYMATRIX 4 6 2\nXYFOV 8 12\nZDELTA 3\nDATUM " + datum +
                                    "\nXYZAXES Left-to-Right Posterior-to-Anterior Inferior-to-Superior\n");
    EXPECT_EQ(d.datatype, type) << datum;
    EXPECT_EQ(d.sample_bytes(), bytes_per_voxel(type)) << datum;
    EXPECT_DOUBLE_EQ(d.voxel_mm[2], 3.0);
    EXPECT_TRUE(d.tr_defaulted);
    EXPECT_DOUBLE_EQ(d.tr_s, 1.0);
  }
}

TEST(AfniRtHeader, LockZorderFreezesOrderAndPattern) {
  const AfniRtHeader h = parse_ok(
      "XYMATRIX 4 4 4\nXYFOV 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nZORDER seq\nLOCK_ZORDER\nZORDER alt\nTPATTERN alt+z\n");
  EXPECT_EQ(h.zorder, SliceOrder::kSequential);
  EXPECT_DOUBLE_EQ(h.slice_timing_s[1], 0.25);
  EXPECT_EQ(h.ignored.size(), 2u);
}

TEST(AfniRtHeader, IgnoredDisplayCommands) {
  const AfniRtHeader h = parse_ok(
      "XYMATRIX 4 4 2\nXYFOV 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nGRAPH_XRANGE 120\nGRAPH_YRANGE 2.5\n"
      "GRAPH_EXPR sqrt(d*d+e*e+f*f)\nPREFIX run3\nNAME epi\nDRIVE_WAIT OPEN_WINDOW axialimage\nECHO_TIMES 13.9 31.7\n");
  EXPECT_EQ(h.ignored.size(), 7u);
}

struct BadCase {
  std::string text;
  ErrorCode code;
  std::string says;  // a piece of the reason
};

TEST(AfniRtHeader, BadInputIsRefusedWithTheCommandNamed) {
  const std::string ok = "XYMATRIX 4 4 3\nXYFOV 8 8\nZDELTA 2\nXYZAXES R-L A-P I-S\n";
  const std::vector<BadCase> cases{
      {"XYFOV 8 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nZNUM 3\n", ErrorCode::kMissingField, "XYMATRIX"},
      {"XYMATRIX 4 4\nXYFOV 8 8\nZDELTA 2\nXYZAXES R-L A-P I-S\n", ErrorCode::kMissingField, "ZNUM"},
      {"XYMATRIX 4 4 3\nZDELTA 2\nXYZAXES R-L A-P I-S\n", ErrorCode::kMissingField, "XYFOV"},
      {"XYMATRIX 4 4 3\nXYFOV 8 8\nXYZAXES R-L A-P I-S\n", ErrorCode::kMissingField, "ZDELTA"},
      {"XYMATRIX 4 4 3\nXYFOV 8 8\nZDELTA 2\n", ErrorCode::kMissingField, "XYZAXES"},
      {ok + "XYZFOV 8 8 6\n", ErrorCode::kMalformed, "unknown command 'XYZFOV'"},
      {ok + "DATUM complex\n", ErrorCode::kInvalidField, "cannot be carried"},
      {ok + "DATUM rgb\n", ErrorCode::kInvalidField, "cannot be carried"},
      {ok + "DATUM long\n", ErrorCode::kInvalidField, "DATUM"},
      {ok + "ACQUISITION_TYPE 4D\n", ErrorCode::kInvalidField, "ACQUISITION_TYPE"},
      {ok + "ZORDER explicit 0 2 1\n", ErrorCode::kInvalidField, "ZORDER explicit"},
      {ok + "TPATTERN explicit 0 0.5\n", ErrorCode::kInvalidField, "2 slice times for 3 slices"},
      {ok + "TR 2\nTPATTERN explicit 0 2.5 1\n", ErrorCode::kInvalidField, "[0, TR)"},
      {ok + "TR 2\nTPATTERN explicit 0 1000 500\n", ErrorCode::kInvalidField, "milliseconds"},
      {ok + "TPATTERN alt-z\n", ErrorCode::kInvalidField, "TPATTERN"},
      {ok + "XYZAXES R-L L-R I-S\n", ErrorCode::kInvalidField, "different directions"},
      {ok + "XYZAXES R-L A-P X-Y\n", ErrorCode::kInvalidField, "XYZAXES"},
      {ok + "XYZFIRST 10A 0 0\n", ErrorCode::kInvalidField, "direction letter A"},
      {ok + "XYZFIRST 10R 5A\n", ErrorCode::kMalformed, "XYZFIRST"},
      {ok + "ZFIRST 10Q\n", ErrorCode::kMalformed, "ZFIRST"},
      {ok + "OBLIQUE_XFORM 1 0 0 0 0 1 0 0 0 0 1 0\n", ErrorCode::kMalformed, "OBLIQUE_XFORM"},
      {ok + "OBLIQUE_XFORM 1 0 0 0 0 1 0 0 0 0 1 0 0 0 1 1\n", ErrorCode::kInvalidField, "last row"},
      {ok + "OBLIQUE_XFORM 1 0 0 0 1 0 0 0 0 0 1 0 0 0 0 1\n", ErrorCode::kInvalidField, "singular"},
      {ok + "NUM_CHAN 33\n", ErrorCode::kInvalidField, "NUM_CHAN"},
      {ok + "TR two\n", ErrorCode::kMalformed, "'two' is not a number"},
      {ok + "TR -1\n", ErrorCode::kInvalidField, "TR"},
      {ok + "TR nan\n", ErrorCode::kMalformed, "TR"},
      {ok + "XYMATRIX 1 4 3\n", ErrorCode::kInvalidField, "XYMATRIX"},
      {ok + "XYMATRIX 4.5 4 3\n", ErrorCode::kMalformed, "integer"},
      {ok + "BYTEORDER BIG\n", ErrorCode::kInvalidField, "BYTEORDER"},
      {ok + "ZDELTA 0\n", ErrorCode::kInvalidField, "ZDELTA"},
      {ok + "XYFOV -8\n", ErrorCode::kInvalidField, "XYFOV"},
      {ok + std::string("NOTE a\x01z\n"), ErrorCode::kMalformed, "not text"},
      {ok + "XYMATRIX 4096 4 3\n", ErrorCode::kTooLarge, "2048"},
      {ok + std::string(kMaxHeaderBytes, ' '), ErrorCode::kTooLarge, "limit"},
  };
  for (const BadCase& c : cases) {
    const auto parsed = parse_afni_rt_header(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.error.code, c.code) << c.text << " -> " << parsed.error.reason;
    EXPECT_NE(parsed.error.reason.find(c.says), std::string::npos) << c.text << " -> " << parsed.error.reason;
  }
  // A volume above the server's payload limit.
  ProtocolLimits small;
  small.max_payload_bytes = 64;
  const auto big = parse_afni_rt_header(ok, small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error.code, ErrorCode::kTooLarge);
  // Slice-by-slice channels each hold a volume being filled: their sum is bounded too (4x4x3 short = 96 bytes).
  small.max_payload_bytes = 100;
  EXPECT_TRUE(parse_afni_rt_header(ok, small).ok());
  const auto channels = parse_afni_rt_header(ok + "NUM_CHAN 2\n", small);
  ASSERT_FALSE(channels.ok());
  EXPECT_EQ(channels.error.code, ErrorCode::kTooLarge);
  EXPECT_TRUE(parse_afni_rt_header(ok + "NUM_CHAN 2\nACQUISITION_TYPE 3D+t\n", small).ok());
}

}  // namespace
}  // namespace rtf::stream::afni
