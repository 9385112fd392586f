// ctest-label: unit
// pyneal compatibility, message level: NumPy dtype names, the C-order -> x-fastest reorder on odd shapes with fresh
// random data (against a plain triple loop and against voxel coordinates), affine and TR parsing, the protocol-1
// VolumeHeader built from a pyneal header, and a table of malformed headers each rejected with a readable reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "stream/protocol/checksum.hpp"
#include "stream/protocol/volume_header.hpp"
#include "stream/pyneal/pyneal_message.hpp"

namespace rtf::stream::pyneal {
namespace {

using nlohmann::json;
using Affine = std::array<std::array<double, 4>, 4>;

const Affine kAffine{{{3.0, 0.0, 0.0, -20.0}, {0.0, 3.0, 0.0, -15.0}, {0.0, 0.0, 3.5, 4.0}, {0.0, 0.0, 0.0, 1.0}}};

json affine_json(const Affine& a) {
  json rows = json::array();
  for (const auto& row : a) rows.push_back(row);
  return rows;
}

// A header the way pyneal_scanner builds it: affine as json.dumps(list), TR as str(seconds).
json pyneal_json(int64_t idx, const std::string& dtype, std::array<int64_t, 3> shape, const Affine& affine = kAffine,
                 const char* tr = "2.0") {
  json h = {{"volIdx", idx}, {"dtype", dtype}, {"shape", shape}, {"affine", affine_json(affine).dump()}};
  if (tr != nullptr) h["TR"] = tr;
  return h;
}

uint32_t fresh_seed() {
  std::random_device rd;
  return rd();
}

std::vector<std::byte> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<std::byte> v(n);
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& b : v) b = static_cast<std::byte>(d(rng));
  return v;
}

// The reorder written out plainly: sample (i, j, k) from C order to x-fastest order.
std::vector<std::byte> reference_reorder(const std::vector<std::byte>& in, std::array<int64_t, 3> s, size_t b,
                                         bool swap) {
  std::vector<std::byte> out(in.size());
  for (int64_t i = 0; i < s[0]; ++i) {
    for (int64_t j = 0; j < s[1]; ++j) {
      for (int64_t k = 0; k < s[2]; ++k) {
        const size_t from = static_cast<size_t>((i * s[1] + j) * s[2] + k) * b;
        const size_t to = static_cast<size_t>((k * s[1] + j) * s[0] + i) * b;
        for (size_t x = 0; x < b; ++x) out[to + x] = in[from + (swap ? b - 1 - x : x)];
      }
    }
  }
  return out;
}

TEST(PynealDtype, NumpyNamesAndTypeStrings) {
  struct Case {
    const char* name;
    size_t bytes;
    DataType type;
    bool big;
  };
  const Case cases[] = {
      {"uint8", 1, DataType::kUint8, false},     {"int16", 2, DataType::kInt16, false},
      {"uint16", 2, DataType::kUint16, false},   {"int32", 4, DataType::kInt32, false},
      {"float32", 4, DataType::kFloat32, false}, {"float64", 8, DataType::kFloat64, false},
      {"|u1", 1, DataType::kUint8, false},       {"u1", 1, DataType::kUint8, false},
      {">u1", 1, DataType::kUint8, false},       {"<i2", 2, DataType::kInt16, false},
      {">i2", 2, DataType::kInt16, true},        {"=i2", 2, DataType::kInt16, false},
      {"i2", 2, DataType::kInt16, false},        {"<u2", 2, DataType::kUint16, false},
      {">u2", 2, DataType::kUint16, true},       {"<i4", 4, DataType::kInt32, false},
      {">i4", 4, DataType::kInt32, true},        {"<f4", 4, DataType::kFloat32, false},
      {">f4", 4, DataType::kFloat32, true},      {"<f8", 8, DataType::kFloat64, false},
      {">f8", 8, DataType::kFloat64, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto d = parse_numpy_dtype(c.name);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->type, c.type);
    EXPECT_EQ(d->bytes, c.bytes);
    EXPECT_EQ(d->big_endian, c.big);
  }
  for (const char* bad :
       {"",    "int8", "int64", "uint32", "float16", "bool", "complex64", "object", "<U10", "|i2",
        "<i3", "<i",   "i",     "<i22",   "xi2",     "<c8",  "Int16",     "int16 ", "<b1",  "float"}) {
    EXPECT_FALSE(parse_numpy_dtype(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(PynealReorder, MatchesPlainTripleLoopOnOddShapes) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const std::array<int64_t, 3> shapes[] = {{1, 1, 1}, {7, 5, 3}, {1, 9, 2}, {13, 1, 4}, {3, 11, 1}, {17, 6, 5}};
  for (const auto& s : shapes) {
    for (const size_t b : {1u, 2u, 4u, 8u}) {
      for (const bool swap : {false, true}) {
        SCOPED_TRACE(testing::Message() << s[0] << "x" << s[1] << "x" << s[2] << " bytes " << b << " swap " << swap);
        const auto in = random_bytes(static_cast<size_t>(s[0] * s[1] * s[2]) * b, rng);
        std::vector<std::byte> out(in.size(), std::byte{0xAB});  // poisoned
        c_order_to_x_fastest(in, s, b, swap, out);
        // One-byte samples have no byte order.
        EXPECT_EQ(out, reference_reorder(in, s, b, swap && b > 1));
      }
    }
  }
}

TEST(PynealReorder, VoxelIJKLandsAtNiftiOffset) {
  const std::array<int64_t, 3> s{5, 4, 3};
  std::vector<int32_t> c_order(60);
  for (int32_t i = 0; i < 5; ++i)
    for (int32_t j = 0; j < 4; ++j)
      for (int32_t k = 0; k < 3; ++k) c_order[(static_cast<size_t>(i) * 4 + j) * 3 + k] = i + 100 * j + 10000 * k;
  std::vector<std::byte> out(240);
  c_order_to_x_fastest(std::as_bytes(std::span(c_order)), s, 4, false, out);
  std::vector<int32_t> f_order(60);
  std::memcpy(f_order.data(), out.data(), out.size());
  for (int32_t i = 0; i < 5; ++i)
    for (int32_t j = 0; j < 4; ++j)
      for (int32_t k = 0; k < 3; ++k)
        EXPECT_EQ(f_order[(static_cast<size_t>(k) * 4 + j) * 5 + i], i + 100 * j + 10000 * k);
}

TEST(PynealReorder, BigEndianSamplesBecomeLittleEndian) {
  // >i2 values 1, -2, 258 (C order, shape 3x1x1).
  const std::vector<std::byte> in{std::byte{0x00}, std::byte{0x01}, std::byte{0xFF},
                                  std::byte{0xFE}, std::byte{0x01}, std::byte{0x02}};
  std::vector<std::byte> out(6);
  c_order_to_x_fastest(in, {3, 1, 1}, 2, true, out);
  int16_t v[3];
  std::memcpy(v, out.data(), 6);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], -2);
  EXPECT_EQ(v[2], 258);
}

TEST(PynealReorder, RejectsMismatchedSizes) {
  std::vector<std::byte> in(10), out(10);
  EXPECT_THROW(c_order_to_x_fastest(in, {2, 2, 2}, 2, false, out), std::invalid_argument);
  EXPECT_THROW(c_order_to_x_fastest(in, {5, 1, 1}, 3, false, out), std::invalid_argument);
}

TEST(PynealHeader, ParsesWhatPynealScannerSends) {
  // Text as pyneal's send_json(volHeader) writes it: json.dumps with ", " and ": " separators.
  const std::string text =
      R"({"volIdx": 4, "TR": "2.0", "dtype": "float64", "shape": [7, 5, 3], )"
      R"("affine": "[[-3.0, 0.0, 0.0, 90.0], [0.0, 3.0, 0.0, -126.0], [0.0, 0.0, 3.5, -72.0], [0.0, 0.0, 0.0, 1.0]]"})";
  const auto parsed = parse_pyneal_header(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  const PynealHeader& h = *parsed.value;
  EXPECT_EQ(h.vol_idx, 4);
  EXPECT_EQ(h.dtype_name, "float64");
  EXPECT_EQ(h.dtype.type, DataType::kFloat64);
  EXPECT_EQ(h.shape, (std::array<int64_t, 3>{7, 5, 3}));
  EXPECT_EQ(h.affine[0][0], -3.0);
  EXPECT_EQ(h.affine[1][3], -126.0);
  EXPECT_EQ(h.affine[2][2], 3.5);
  EXPECT_EQ(h.affine[3], (std::array<double, 4>{0, 0, 0, 1}));
  ASSERT_TRUE(h.tr_s.has_value());
  EXPECT_DOUBLE_EQ(*h.tr_s, 2.0);
  EXPECT_FALSE(h.tr_was_milliseconds);
  EXPECT_TRUE(h.ignored_fields.empty());
  EXPECT_EQ(h.payload_bytes(), 7u * 5 * 3 * 8);
}

TEST(PynealHeader, AffineAsPlainListTrAsNumberExtraFieldsIgnored) {
  json j = pyneal_json(0, "int16", {2, 3, 4});
  j["affine"] = affine_json(kAffine);
  j["TR"] = 1.5;
  j["numTimepts"] = 100;
  const auto parsed = parse_pyneal_header(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_EQ(parsed.value->affine, kAffine);
  EXPECT_DOUBLE_EQ(*parsed.value->tr_s, 1.5);
  EXPECT_EQ(parsed.value->ignored_fields, std::vector<std::string>{"numTimepts"});
}

TEST(PynealHeader, TrInMillisecondsAndMissingTr) {
  // pyneal's own scanner simulator sends str(TR * 1000).
  auto parsed = parse_pyneal_header(pyneal_json(0, "int16", {2, 2, 2}, kAffine, "1000.0").dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_DOUBLE_EQ(*parsed.value->tr_s, 1.0);
  EXPECT_TRUE(parsed.value->tr_was_milliseconds);
  parsed = parse_pyneal_header(pyneal_json(0, "int16", {2, 2, 2}, kAffine, " 0.8 ").dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_DOUBLE_EQ(*parsed.value->tr_s, 0.8);
  EXPECT_FALSE(parsed.value->tr_was_milliseconds);
  parsed = parse_pyneal_header(pyneal_json(0, "int16", {2, 2, 2}, kAffine, nullptr).dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_FALSE(parsed.value->tr_s.has_value());

  // Without a TR the volume needs an override.
  const std::vector<std::byte> data(16);
  PynealParseOptions options;
  auto volume = to_volume(*parsed.value, data, options);
  ASSERT_FALSE(volume.ok());
  EXPECT_EQ(volume.error.code, ErrorCode::kMissingField);
  EXPECT_NE(volume.error.reason.find("'TR'"), std::string::npos) << volume.error.reason;
  options.tr_override_s = 1.25;
  volume = to_volume(*parsed.value, data, options);
  ASSERT_TRUE(volume.ok()) << volume.error.reason;
  EXPECT_DOUBLE_EQ(volume.value->header.tr_s, 1.25);
}

TEST(PynealVolume, BuildsAProtocolVolumeWithReorderedPayload) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  // Oblique affine: rotation about z by 0.3 rad times voxel sizes (2.5, 3, 3.5), as nibabel builds from DICOM.
  const double c = std::cos(0.3), s = std::sin(0.3);
  const Affine oblique{
      {{2.5 * c, -3.0 * s, 0.0, -80.0}, {2.5 * s, 3.0 * c, 0.0, -100.0}, {0.0, 0.0, 3.5, -30.0}, {0.0, 0.0, 0.0, 1.0}}};
  const std::array<int64_t, 3> shape{9, 7, 5};
  for (const char* dtype : {"int16", "float64", ">i2", "uint8", "<f4"}) {
    SCOPED_TRACE(dtype);
    const NumpyDtype d = *parse_numpy_dtype(dtype);
    const auto data = random_bytes(9 * 7 * 5 * d.bytes, rng);
    PynealParseOptions options;
    options.session = "sub-07";
    options.run = "run-03";
    const auto volume = parse_pyneal_volume(pyneal_json(11, dtype, shape, oblique, "1.5").dump(), data, options);
    ASSERT_TRUE(volume.ok()) << volume.error.reason;
    const VolumeHeader& h = volume.value->header;
    EXPECT_EQ(h.protocol, 1);
    EXPECT_EQ(h.session, "sub-07");
    EXPECT_EQ(h.run, "run-03");
    EXPECT_EQ(h.index, 11);
    EXPECT_EQ(h.dims, shape);
    EXPECT_EQ(h.datatype, d.type);
    EXPECT_NEAR(h.voxel_mm[0], 2.5, 1e-12);
    EXPECT_NEAR(h.voxel_mm[1], 3.0, 1e-12);
    EXPECT_NEAR(h.voxel_mm[2], 3.5, 1e-12);
    EXPECT_EQ(h.affine, oblique);
    EXPECT_DOUBLE_EQ(h.tr_s, 1.5);
    EXPECT_FALSE(h.acquisition_time.has_value());
    EXPECT_EQ(h.payload_bytes, data.size());
    EXPECT_EQ(volume.value->payload, reference_reorder(data, shape, d.bytes, d.big_endian));
    EXPECT_EQ(h.checksum, crc32(volume.value->payload));
    // The result is a valid protocol-1 volume: its payload checks out and its header survives the strict parser.
    EXPECT_TRUE(check_payload(h, volume.value->payload).ok());
    const auto round_trip = parse_volume_header(serialize(h));
    ASSERT_TRUE(round_trip.ok()) << round_trip.error.reason;
    EXPECT_EQ(*round_trip.value, h);
  }
}

TEST(PynealVolume, TrOverrideWins) {
  PynealParseOptions options;
  options.tr_override_s = 0.75;
  const auto v = parse_pyneal_volume(pyneal_json(0, "uint8", {2, 1, 1}).dump(), std::vector<std::byte>(2), options);
  ASSERT_TRUE(v.ok()) << v.error.reason;
  EXPECT_DOUBLE_EQ(v.value->header.tr_s, 0.75);
}

struct BadCase {
  const char* what;
  std::function<std::string()> header;  // JSON text
  ErrorCode code;
  const char* mentions;  // substring the reason must contain
};

TEST(PynealHeader, MalformedHeadersAreRejectedWithAReason) {
  const auto with = [](const char* key, const json& value) {
    return [key, value] {
      json j = pyneal_json(0, "int16", {4, 3, 2});
      j[key] = value;
      return j.dump();
    };
  };
  const auto without = [](const char* key) {
    return [key] {
      json j = pyneal_json(0, "int16", {4, 3, 2});
      j.erase(key);
      return j.dump();
    };
  };
  Affine last_row_bad = kAffine;
  last_row_bad[3][2] = 0.5;
  const BadCase cases[] = {
      {"empty", [] { return std::string(); }, ErrorCode::kMalformed, "empty"},
      {"not JSON", [] { return std::string("hello from pyneal_scanner"); }, ErrorCode::kMalformed, "JSON"},
      {"array", [] { return std::string("[1, 2]"); }, ErrorCode::kMalformed, "object"},
      {"duplicate key", [] { return std::string(R"({"volIdx": 0, "volIdx": 1})"); }, ErrorCode::kMalformed,
       "duplicate"},
      {"too deep", [] { return std::string(R"({"a": [[[[[1]]]]]})"); }, ErrorCode::kMalformed, "nested"},
      {"too large", [] { return std::string(70000, ' ') + "{}"; }, ErrorCode::kTooLarge, "limit"},
      {"no volIdx", without("volIdx"), ErrorCode::kMissingField, "volIdx"},
      {"no dtype", without("dtype"), ErrorCode::kMissingField, "dtype"},
      {"no shape", without("shape"), ErrorCode::kMissingField, "shape"},
      {"no affine", without("affine"), ErrorCode::kMissingField, "affine"},
      {"volIdx negative", with("volIdx", -1), ErrorCode::kInvalidField, "volIdx"},
      {"volIdx float", with("volIdx", 1.0), ErrorCode::kInvalidField, "volIdx"},
      {"volIdx string", with("volIdx", "3"), ErrorCode::kInvalidField, "volIdx"},
      {"volIdx too large", with("volIdx", 100000), ErrorCode::kIndexOutOfRange, "max_volumes"},
      {"dtype int8", with("dtype", "int8"), ErrorCode::kInvalidField, "dtype"},
      {"dtype number", with("dtype", 16), ErrorCode::kInvalidField, "dtype"},
      {"dtype long", with("dtype", std::string(100, 'x')), ErrorCode::kInvalidField, "dtype"},
      {"shape 2D", with("shape", json::array({4, 3})), ErrorCode::kInvalidField, "shape"},
      {"shape 4D", with("shape", json::array({4, 3, 2, 1})), ErrorCode::kInvalidField, "shape"},
      {"shape zero", with("shape", json::array({4, 0, 2})), ErrorCode::kInvalidField, "shape[1]"},
      {"shape float", with("shape", json::array({4, 3, 2.0})), ErrorCode::kInvalidField, "shape[2]"},
      {"shape too wide", with("shape", json::array({4, 3, 4096})), ErrorCode::kInvalidField, "shape[2]"},
      {"shape too many voxels", with("shape", json::array({2048, 2048, 128})), ErrorCode::kInvalidField, "voxels"},
      {"shape above payload limit",
       [] {
         return pyneal_json(0, "float64", {2048, 2048, 64}).dump();
       },
       ErrorCode::kTooLarge, "limit"},
      {"shape not a list", with("shape", "(4, 3, 2)"), ErrorCode::kInvalidField, "shape"},
      {"affine number", with("affine", 3), ErrorCode::kInvalidField, "affine"},
      {"affine not JSON", with("affine", "[[1, 0"), ErrorCode::kInvalidField, "affine"},
      {"affine NaN", with("affine", "[[NaN, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]"),
       ErrorCode::kInvalidField, "affine"},
      {"affine 3 rows", with("affine", "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]"), ErrorCode::kInvalidField,
       "affine"},
      {"affine short row", with("affine", "[[1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]"),
       ErrorCode::kInvalidField, "affine[0]"},
      {"affine string entry", with("affine", R"([["1", 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])"),
       ErrorCode::kInvalidField, "affine[0][0]"},
      {"affine object", with("affine", R"({"a": 1})"), ErrorCode::kInvalidField, "object"},
      {"affine nested", with("affine", "[[[1]]]"), ErrorCode::kInvalidField, "nested"},
      {"affine last row", with("affine", affine_json(last_row_bad).dump()), ErrorCode::kInvalidField, "affine[3]"},
      {"affine huge string", with("affine", std::string(5000, ' ')), ErrorCode::kInvalidField, "limit"},
      {"TR text", with("TR", "two"), ErrorCode::kInvalidField, "TR"},
      {"TR zero", with("TR", "0"), ErrorCode::kInvalidField, "TR"},
      {"TR negative", with("TR", -2.0), ErrorCode::kInvalidField, "TR"},
      {"TR NaN", with("TR", "NaN"), ErrorCode::kInvalidField, "TR"},
      {"TR list", with("TR", json::array({2})), ErrorCode::kInvalidField, "TR"},
      {"TR long", with("TR", std::string(100, '1')), ErrorCode::kInvalidField, "TR"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto parsed = parse_pyneal_header(c.header());
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error.code, c.code) << to_string(parsed.error.code) << ": " << parsed.error.reason;
    EXPECT_NE(parsed.error.reason.find(c.mentions), std::string::npos) << parsed.error.reason;
  }
}

TEST(PynealVolume, MalformedVolumesAreRejectedWithAReason) {
  PynealParseOptions options;
  // Data frame length must match shape x dtype.
  auto v = parse_pyneal_volume(pyneal_json(0, "int16", {4, 3, 2}).dump(), std::vector<std::byte>(47), options);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error.code, ErrorCode::kPayloadSize);
  EXPECT_NE(v.error.reason.find("48"), std::string::npos) << v.error.reason;
  v = parse_pyneal_volume(pyneal_json(0, "float64", {4, 3, 2}).dump(), std::vector<std::byte>(48), options);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error.code, ErrorCode::kPayloadSize);
  // A degenerate affine gives no voxel size.
  Affine flat = kAffine;
  flat[2][2] = 0.0;
  v = parse_pyneal_volume(pyneal_json(0, "int16", {4, 3, 2}, flat).dump(), std::vector<std::byte>(48), options);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error.code, ErrorCode::kInvalidField);
  EXPECT_NE(v.error.reason.find("column 2"), std::string::npos) << v.error.reason;
  // rtfmri's own ids must be valid.
  options.session = "../etc";
  v = parse_pyneal_volume(pyneal_json(0, "int16", {4, 3, 2}).dump(), std::vector<std::byte>(48), options);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error.code, ErrorCode::kInternal);
}

}  // namespace
}  // namespace rtf::stream::pyneal
