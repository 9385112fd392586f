// ctest-label: unit
// VOLUME header of the ingest protocol: random round trips, a table of malformed headers (each rejected with a
// reason naming the field), payload length/checksum checks, within-run consistency, CRC-32 text form.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "stream/protocol/checksum.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream {
namespace {

using nlohmann::json;

VolumeHeader small_header() {
  VolumeHeader h;
  h.session = "sub-01_ses.A";
  h.run = "run-1";
  h.index = 3;
  h.dims = {4, 3, 2};
  h.voxel_mm = {3.0, 3.0, 3.5};
  h.affine = {{{3, 0, 0, -6}, {0, 3, 0, -4.5}, {0, 0, 3.5, -3.5}, {0, 0, 0, 1}}};
  h.datatype = DataType::kInt16;
  h.tr_s = 2.0;
  h.acquisition_time = 12.5;
  h.slice_timing_s = {0.0, 1.0};
  h.payload_bytes = h.expected_payload_bytes();
  h.checksum = 0x0123abcd;
  return h;
}

std::string random_id(std::mt19937_64& rng) {
  static constexpr std::string_view kChars = "ABCXYZabcxyz0189._-";
  std::uniform_int_distribution<size_t> len(1, kMaxIdLength), pick(0, kChars.size() - 1);
  std::string s(len(rng), 'a');
  for (auto& c : s) c = kChars[pick(rng)];
  if (s[0] == '.') s[0] = 'x';
  return s;
}

VolumeHeader random_header(std::mt19937_64& rng) {
  static constexpr DataType kTypes[] = {DataType::kUint8, DataType::kInt16,   DataType::kUint16,
                                        DataType::kInt32, DataType::kFloat32, DataType::kFloat64};
  std::uniform_int_distribution<int64_t> dim(1, 128), idx(0, 99999);
  std::uniform_real_distribution<double> any(-1e3, 1e3), pos(1e-3, 10.0), unit(0.0, 1.0);
  VolumeHeader h;
  h.session = random_id(rng);
  h.run = random_id(rng);
  h.index = idx(rng);
  h.dims = {dim(rng), dim(rng), dim(rng)};
  h.voxel_mm = {pos(rng), pos(rng), pos(rng)};
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 4; ++c) h.affine[r][c] = any(rng);
  h.datatype = kTypes[rng() % 6];
  h.tr_s = pos(rng);
  if (rng() % 2) h.acquisition_time = any(rng) * 1e6;
  if (rng() % 2) {
    for (int64_t z = 0; z < h.dims[2]; ++z) h.slice_timing_s.push_back(unit(rng) * h.tr_s * 0.999);
  }
  h.payload_bytes = h.expected_payload_bytes();
  h.checksum = static_cast<uint32_t>(rng());
  return h;
}

TEST(VolumeHeader, RandomRoundTrip) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 500; ++i) {
    const VolumeHeader h = random_header(rng);
    const std::string text = serialize(h);
    const ParseResult parsed = parse_volume_header(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error.reason << "\n" << text;
    EXPECT_EQ(*parsed.value, h) << text;
    EXPECT_EQ(serialize(*parsed.value), text);
  }
}

TEST(VolumeHeader, SmallHeaderRoundTripAndFields) {
  const VolumeHeader h = small_header();
  const json j = json::parse(serialize(h));
  EXPECT_EQ(j["protocol"], 1);
  EXPECT_EQ(j["type"], "volume");
  EXPECT_EQ(j["datatype"], "int16");
  EXPECT_EQ(j["checksum"], "crc32:0123abcd");
  EXPECT_EQ(j["payload_bytes"], 48);
  EXPECT_EQ(j["affine"][1][3], -4.5);
  const ParseResult parsed = parse_volume_header(serialize(h));
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_EQ(*parsed.value, h);
}

TEST(VolumeHeader, OptionalFieldsMayBeOmitted) {
  VolumeHeader h = small_header();
  h.acquisition_time.reset();
  h.slice_timing_s.clear();
  const std::string text = serialize(h);
  EXPECT_EQ(text.find("acquisition_time"), std::string::npos);
  EXPECT_EQ(text.find("slice_timing_s"), std::string::npos);
  const ParseResult parsed = parse_volume_header(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_EQ(*parsed.value, h);
}

// One malformed header: built from the valid small header by editing its JSON (or given as raw text).
struct BadCase {
  std::string name;
  std::function<void(json&)> edit;  // null when raw is used
  std::string raw;
  ErrorCode code;
  std::string field;  // must appear in the reason
};

std::vector<BadCase> bad_cases() {
  const auto set = [](const char* key, json value) { return [key, value](json& j) { j[key] = value; }; };
  const auto erase = [](const char* key) { return [key](json& j) { j.erase(key); }; };
  const std::string valid = serialize(small_header());
  std::string non_utf8 = valid;
  non_utf8.replace(non_utf8.find("sub-01"), 1, "\xff");
  std::string deep = "{\"protocol\":1,\"type\":\"volume\",\"session\":[[[[[[[[1]]]]]]]]}";
  std::string duplicate = valid;
  duplicate.insert(1, "\"index\":7,");
  return {
      {"not json", nullptr, "hello", ErrorCode::kMalformed, "not valid JSON"},
      {"empty frame", nullptr, "", ErrorCode::kMalformed, "empty"},
      {"truncated", nullptr, valid.substr(0, valid.size() / 2), ErrorCode::kMalformed, "not valid JSON"},
      {"trailing garbage", nullptr, valid + "x", ErrorCode::kMalformed, "not valid JSON"},
      {"top-level array", nullptr, "[1,2,3]", ErrorCode::kMalformed, "JSON object"},
      {"NaN literal", nullptr, "{\"tr_s\": NaN}", ErrorCode::kMalformed, "not valid JSON"},
      {"non-UTF-8 byte", nullptr, non_utf8, ErrorCode::kMalformed, "not valid JSON"},
      {"deep nesting", nullptr, deep, ErrorCode::kMalformed, "nested"},
      {"duplicate key", nullptr, duplicate, ErrorCode::kMalformed, "duplicate key 'index'"},
      {"too large", nullptr, std::string(70000, ' ') + valid, ErrorCode::kTooLarge, "header frame"},
      {"protocol missing", erase("protocol"), "", ErrorCode::kMissingField, "'protocol'"},
      {"protocol 2", set("protocol", 2), "", ErrorCode::kUnsupportedProtocol, "'protocol'"},
      {"protocol string", set("protocol", "1"), "", ErrorCode::kInvalidField, "'protocol'"},
      {"type wrong", set("type", "end_of_run"), "", ErrorCode::kInvalidField, "'type'"},
      {"unknown field", set("tr", 2.0), "", ErrorCode::kUnknownField, "'tr'"},
      {"session missing", erase("session"), "", ErrorCode::kMissingField, "'session'"},
      {"session empty", set("session", ""), "", ErrorCode::kInvalidField, "'session'"},
      {"session slash", set("session", "../etc"), "", ErrorCode::kInvalidField, "'session'"},
      {"session dot-dot", set("session", ".."), "", ErrorCode::kInvalidField, "'session'"},
      {"session too long", set("session", std::string(65, 'a')), "", ErrorCode::kInvalidField, "'session'"},
      {"run number", set("run", 1), "", ErrorCode::kInvalidField, "'run'"},
      {"index negative", set("index", -1), "", ErrorCode::kInvalidField, "'index'"},
      {"index fractional", set("index", 1.5), "", ErrorCode::kInvalidField, "'index'"},
      {"index at max_volumes", set("index", 100000), "", ErrorCode::kIndexOutOfRange, "'index'"},
      {"index huge", set("index", 18446744073709551615ull), "", ErrorCode::kInvalidField, "'index'"},
      {"index 1e300", set("index", 1e300), "", ErrorCode::kInvalidField, "'index'"},
      {"dims two", set("dims", json::array({4, 3})), "", ErrorCode::kInvalidField, "'dims'"},
      {"dims zero", set("dims", json::array({4, 0, 2})), "", ErrorCode::kInvalidField, "'dims[1]'"},
      {"dims 2049", set("dims", json::array({2049, 1, 1})), "", ErrorCode::kInvalidField, "'dims[0]'"},
      {"dims product", set("dims", json::array({2048, 2048, 2048})), "", ErrorCode::kInvalidField, "'dims'"},
      {"dims string", set("dims", "4x3x2"), "", ErrorCode::kInvalidField, "'dims'"},
      {"voxel negative", set("voxel_mm", json::array({3, -3, 3})), "", ErrorCode::kInvalidField, "'voxel_mm[1]'"},
      {"voxel string", set("voxel_mm", json::array({3, "3", 3})), "", ErrorCode::kInvalidField, "'voxel_mm[1]'"},
      {"affine 3 rows", set("affine", json::array({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}})), "",
       ErrorCode::kInvalidField, "'affine'"},
      {"affine short row", set("affine", json::array({{1, 0, 0, 0}, {0, 1, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}})), "",
       ErrorCode::kInvalidField, "'affine[1]'"},
      {"affine last row", set("affine", json::array({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 1, 1}})), "",
       ErrorCode::kInvalidField, "'affine[3]'"},
      {"affine null", set("affine", json::array({{1, 0, 0, 0}, {0, nullptr, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}})), "",
       ErrorCode::kInvalidField, "'affine[1][1]'"},
      {"datatype unknown", set("datatype", "complex64"), "", ErrorCode::kInvalidField, "'datatype'"},
      {"datatype code", set("datatype", 4), "", ErrorCode::kInvalidField, "'datatype'"},
      {"tr zero", set("tr_s", 0.0), "", ErrorCode::kInvalidField, "'tr_s'"},
      {"tr missing", erase("tr_s"), "", ErrorCode::kMissingField, "'tr_s'"},
      {"acquisition string", set("acquisition_time", "now"), "", ErrorCode::kInvalidField, "'acquisition_time'"},
      {"acquisition null", set("acquisition_time", nullptr), "", ErrorCode::kInvalidField, "'acquisition_time'"},
      {"slice timing length", set("slice_timing_s", json::array({0.0})), "", ErrorCode::kInvalidField,
       "'slice_timing_s'"},
      {"slice timing >= tr", set("slice_timing_s", json::array({0.0, 2.0})), "", ErrorCode::kInvalidField,
       "'slice_timing_s[1]'"},
      {"slice timing negative", set("slice_timing_s", json::array({-0.1, 1.0})), "", ErrorCode::kInvalidField,
       "'slice_timing_s[0]'"},
      {"payload mismatch", set("payload_bytes", 47), "", ErrorCode::kInvalidField, "'payload_bytes'"},
      {"payload negative", set("payload_bytes", -48), "", ErrorCode::kInvalidField, "'payload_bytes'"},
      {"payload missing", erase("payload_bytes"), "", ErrorCode::kMissingField, "'payload_bytes'"},
      {"checksum uppercase", set("checksum", "crc32:0123ABCD"), "", ErrorCode::kInvalidField, "'checksum'"},
      {"checksum short", set("checksum", "crc32:0123abc"), "", ErrorCode::kInvalidField, "'checksum'"},
      {"checksum other algorithm", set("checksum", "md5:0123abcd"), "", ErrorCode::kInvalidField, "'checksum'"},
      {"checksum number", set("checksum", 19114957), "", ErrorCode::kInvalidField, "'checksum'"},
  };
}

TEST(VolumeHeader, MalformedHeadersAreRejectedNamingTheField) {
  const auto cases = bad_cases();
  EXPECT_GE(cases.size(), 25u);
  for (const auto& c : cases) {
    std::string text = c.raw;
    if (c.edit) {
      json j = json::parse(serialize(small_header()));
      c.edit(j);
      text = j.dump();
    }
    const ParseResult parsed = parse_volume_header(text);
    EXPECT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.error.code, c.code) << c.name << ": " << to_string(parsed.error.code) << " "
                                         << parsed.error.reason;
    EXPECT_NE(parsed.error.reason.find(c.field), std::string::npos)
        << c.name << ": reason \"" << parsed.error.reason << "\" does not mention " << c.field;
    for (const char ch : parsed.error.reason) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << c.name << ": unprintable reason";
  }
}

TEST(VolumeHeader, PayloadLimitIsAppliedFromLimits) {
  VolumeHeader h = small_header();
  ProtocolLimits limits;
  limits.max_payload_bytes = 47;
  const ParseResult parsed = parse_volume_header(serialize(h), limits);
  EXPECT_EQ(parsed.error.code, ErrorCode::kTooLarge);
  EXPECT_NE(parsed.error.reason.find("payload_bytes"), std::string::npos);
  limits.max_payload_bytes = 48;
  EXPECT_TRUE(parse_volume_header(serialize(h), limits).ok());
  limits.max_volumes = 3;
  EXPECT_EQ(parse_volume_header(serialize(h), limits).error.code, ErrorCode::kIndexOutOfRange);
}

TEST(VolumeHeader, PayloadLengthAndChecksum) {
  std::vector<std::byte> payload(48);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 7);
  VolumeHeader h = small_header();
  h.checksum = crc32(payload);
  EXPECT_TRUE(check_payload(h, payload).ok());

  const ProtocolError short_payload = check_payload(h, std::span(payload).first(47));
  EXPECT_EQ(short_payload.code, ErrorCode::kPayloadSize);
  EXPECT_NE(short_payload.reason.find("47"), std::string::npos) << short_payload.reason;
  std::vector<std::byte> longer = payload;
  longer.push_back(std::byte{0});
  EXPECT_EQ(check_payload(h, longer).code, ErrorCode::kPayloadSize);

  payload[17] ^= std::byte{1};
  const ProtocolError flipped = check_payload(h, payload);
  EXPECT_EQ(flipped.code, ErrorCode::kChecksumMismatch);
  EXPECT_NE(flipped.reason.find("checksum"), std::string::npos) << flipped.reason;
}

TEST(VolumeHeader, ConsistencyWithinRun) {
  const VolumeHeader first = small_header();
  VolumeHeader next = first;
  next.index = 4;
  next.checksum = 7;
  next.acquisition_time = 14.5;
  next.affine[0][3] += 5e-5;  // within tolerance
  std::string why;
  EXPECT_TRUE(consistent_within_run(first, next, &why)) << why;

  const std::vector<std::pair<std::string, std::function<void(VolumeHeader&)>>> changes = {
      {"dims",
       [](VolumeHeader& h) {
         h.dims = {3, 4, 2};
       }},
      {"datatype", [](VolumeHeader& h) { h.datatype = DataType::kUint16; }},
      {"voxel_mm", [](VolumeHeader& h) { h.voxel_mm[2] = 3.6; }},
      {"affine", [](VolumeHeader& h) { h.affine[1][3] += 1e-3; }},
      {"tr_s", [](VolumeHeader& h) { h.tr_s = 2.5; }},
      {"run", [](VolumeHeader& h) { h.run = "run-2"; }},
  };
  for (const auto& [field, change] : changes) {
    VolumeHeader changed = first;
    change(changed);
    why.clear();
    EXPECT_FALSE(consistent_within_run(first, changed, &why)) << field;
    EXPECT_NE(why.find(field), std::string::npos) << field << ": " << why;
  }
}

TEST(VolumeHeader, ToImageHeader) {
  const VolumeHeader h = small_header();
  const ImageHeader image = to_image_header(h, 10);
  EXPECT_EQ(image.dims, h.dims);
  EXPECT_EQ(image.num_volumes, 10);
  EXPECT_EQ(image.voxel_mm, h.voxel_mm);
  EXPECT_EQ(image.affine(1, 3), -4.5);
  EXPECT_EQ(image.affine(2, 2), 3.5);
  EXPECT_EQ(image.tr_s, 2.0);
  EXPECT_EQ(image.source_type, DataType::kInt16);
}

TEST(Checksum, KnownValueAndTextForm) {
  const char* text = "123456789";
  const auto bytes = std::as_bytes(std::span(text, std::strlen(text)));
  EXPECT_EQ(crc32(bytes), 0xcbf43926u);
  EXPECT_EQ(crc32({}), 0u);
  EXPECT_EQ(format_checksum(0xcbf43926u), "crc32:cbf43926");
  EXPECT_EQ(format_checksum(0x00000a0bu), "crc32:00000a0b");
  EXPECT_EQ(parse_checksum("crc32:cbf43926"), 0xcbf43926u);
  EXPECT_EQ(parse_checksum("crc32:CBF43926"), std::nullopt);
  EXPECT_EQ(parse_checksum("crc32:cbf4392"), std::nullopt);
  EXPECT_EQ(parse_checksum("crc32:cbf439261"), std::nullopt);
  EXPECT_EQ(parse_checksum("crc32:cbf4392g"), std::nullopt);
  EXPECT_EQ(parse_checksum("adler:cbf43926"), std::nullopt);
}

TEST(Datatypes, WireNamesAndSizes) {
  EXPECT_EQ(datatype_from_wire("float32"), DataType::kFloat32);
  EXPECT_EQ(datatype_from_wire("int8"), std::nullopt);
  EXPECT_EQ(datatype_to_wire(DataType::kUint16), "uint16");
  EXPECT_EQ(datatype_bytes(DataType::kFloat64), 8u);
  EXPECT_EQ(datatype_bytes(DataType::kInt64), 0u);
}

}  // namespace
}  // namespace rtf::stream
