// ctest-label: unit
// Ingest protocol messages besides the VOLUME header: END_OF_RUN, ACK/NACK round trips, dispatch of sender
// headers by type, and NACKs echoing what can be read from a rejected header.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <variant>

#include "stream/protocol/messages.hpp"

namespace rtf::stream {
namespace {

using nlohmann::json;

TEST(EndOfRun, RoundTripAndWireForm) {
  const EndOfRun m{1, "sess", "run-02", 120};
  const std::string text = serialize(m);
  const json j = json::parse(text);
  EXPECT_EQ(j["type"], "end_of_run");
  EXPECT_EQ(j["protocol"], 1);
  EXPECT_EQ(j["num_volumes"], 120);
  const auto parsed = parse_end_of_run(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  EXPECT_EQ(*parsed.value, m);
}

TEST(EndOfRun, Malformed) {
  const struct {
    std::string text;
    ErrorCode code;
    std::string field;
  } cases[] = {
      {R"({"protocol":1,"type":"end_of_run","session":"s","run":"r"})", ErrorCode::kMissingField, "'num_volumes'"},
      {R"({"protocol":1,"type":"end_of_run","session":"s","run":"r","num_volumes":-1})", ErrorCode::kInvalidField,
       "'num_volumes'"},
      {R"({"protocol":1,"type":"end_of_run","session":"s","run":"r","num_volumes":100001})", ErrorCode::kInvalidField,
       "'num_volumes'"},
      {R"({"protocol":1,"type":"end_of_run","session":"s/t","run":"r","num_volumes":1})", ErrorCode::kInvalidField,
       "'session'"},
      {R"({"protocol":1,"type":"volume","session":"s","run":"r","num_volumes":1})", ErrorCode::kInvalidField, "'type'"},
      {R"({"protocol":3,"type":"end_of_run","session":"s","run":"r","num_volumes":1})", ErrorCode::kUnsupportedProtocol,
       "'protocol'"},
      {R"({"protocol":1,"type":"end_of_run","session":"s","run":"r","num_volumes":1,"x":0})", ErrorCode::kUnknownField,
       "'x'"},
      {R"({"protocol":1,"type":"end_of_run")", ErrorCode::kMalformed, "JSON"},
  };
  for (const auto& c : cases) {
    const auto parsed = parse_end_of_run(c.text);
    EXPECT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.error.code, c.code) << c.text << ": " << parsed.error.reason;
    EXPECT_NE(parsed.error.reason.find(c.field), std::string::npos) << c.text << ": " << parsed.error.reason;
  }
}

TEST(Replies, AckRoundTrip) {
  const Ack acks[] = {
      {ReplyTo::kVolume, "s1", "r1", 0, false},
      {ReplyTo::kVolume, "s1", "r1", 41, true},
      {ReplyTo::kEndOfRun, "s1", "r1", std::nullopt, false},
  };
  for (const Ack& ack : acks) {
    const std::string text = serialize(ack);
    const auto parsed = parse_reply(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error.reason << " " << text;
    ASSERT_TRUE(std::holds_alternative<Ack>(*parsed.value)) << text;
    EXPECT_EQ(std::get<Ack>(*parsed.value), ack) << text;
  }
  const json j = json::parse(serialize(acks[1]));
  EXPECT_EQ(j["type"], "ack");
  EXPECT_EQ(j["of"], "volume");
  EXPECT_EQ(j["index"], 41);
  EXPECT_EQ(j["duplicate"], true);
  EXPECT_FALSE(json::parse(serialize(acks[0])).contains("duplicate"));
}

TEST(Replies, NackRoundTrip) {
  const Nack nacks[] = {
      {ReplyTo::kVolume, "s1", "r1", 7, ErrorCode::kChecksumMismatch, "payload checksum is crc32:00000000, ..."},
      {ReplyTo::kUnknown, "", "", std::nullopt, ErrorCode::kMalformed, "header frame is not valid JSON"},
      {ReplyTo::kEndOfRun, "s1", "r1", std::nullopt, ErrorCode::kIncompleteRun, "missing volumes 3, 9"},
      {ReplyTo::kVolume, "s1", "r1", 2, ErrorCode::kInternal, "recording failed: \"disk full\"\n"},
  };
  for (const Nack& nack : nacks) {
    const std::string text = serialize(nack);
    const auto parsed = parse_reply(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error.reason << " " << text;
    ASSERT_TRUE(std::holds_alternative<Nack>(*parsed.value)) << text;
    EXPECT_EQ(std::get<Nack>(*parsed.value), nack) << text;
  }
  const json j = json::parse(serialize(nacks[0]));
  EXPECT_EQ(j["type"], "nack");
  EXPECT_EQ(j["code"], "checksum_mismatch");
  EXPECT_EQ(j["session"], "s1");
}

TEST(Replies, EveryErrorCodeHasAWireName) {
  for (int c = static_cast<int>(ErrorCode::kOk); c <= static_cast<int>(ErrorCode::kInternal); ++c) {
    const auto code = static_cast<ErrorCode>(c);
    EXPECT_EQ(error_code_from_string(to_string(code)), code) << to_string(code);
  }
}

TEST(Replies, UnknownCodeFromNewerServerBecomesInternal) {
  const auto parsed =
      parse_reply(R"({"protocol":1,"type":"nack","of":"volume","index":3,"code":"quota","reason":"over quota"})");
  ASSERT_TRUE(parsed.ok()) << parsed.error.reason;
  const Nack& nack = std::get<Nack>(*parsed.value);
  EXPECT_EQ(nack.code, ErrorCode::kInternal);
  EXPECT_EQ(nack.reason, "over quota");
  EXPECT_EQ(nack.index, 3);
}

TEST(Replies, BadRepliesAreRejected) {
  for (const char* text :
       {"", "ack", R"({"protocol":1,"type":"hello","of":"volume"})", R"({"protocol":1,"type":"ack"})",
        R"({"protocol":1,"type":"ack","of":"frame"})",
        R"({"protocol":1,"type":"nack","of":"volume","code":"malformed"})",
        R"({"protocol":1,"type":"ack","of":"volume","index":-2})", R"({"protocol":2,"type":"ack","of":"volume"})"}) {
    const auto parsed = parse_reply(text);
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_FALSE(parsed.error.reason.empty()) << text;
  }
}

TEST(SenderHeader, DispatchesOnType) {
  VolumeHeader v;
  v.session = "s";
  v.run = "r";
  v.index = 5;
  const auto volume = parse_sender_header(serialize(v));
  ASSERT_TRUE(volume.ok()) << volume.error.reason;
  ASSERT_TRUE(std::holds_alternative<VolumeHeader>(*volume.value));
  EXPECT_EQ(std::get<VolumeHeader>(*volume.value), v);

  const EndOfRun e{1, "s", "r", 6};
  const auto end = parse_sender_header(serialize(e));
  ASSERT_TRUE(end.ok()) << end.error.reason;
  ASSERT_TRUE(std::holds_alternative<EndOfRun>(*end.value));
  EXPECT_EQ(std::get<EndOfRun>(*end.value), e);

  const auto other = parse_sender_header(R"({"protocol":1,"type":"hello"})");
  EXPECT_FALSE(other.ok());
  EXPECT_NE(other.error.reason.find("'type'"), std::string::npos) << other.error.reason;
}

TEST(SenderHeader, NackEchoesReadableIds) {
  VolumeHeader v;
  v.session = "s";
  v.run = "r";
  v.index = 9;
  json j = json::parse(serialize(v));
  j["dims"] = "bad";
  const std::string text = j.dump();
  const auto parsed = parse_sender_header(text);
  ASSERT_FALSE(parsed.ok());
  const Nack nack = make_nack(text, parsed.error);
  EXPECT_EQ(nack.of, ReplyTo::kVolume);
  EXPECT_EQ(nack.session, "s");
  EXPECT_EQ(nack.run, "r");
  EXPECT_EQ(nack.index, 9);
  EXPECT_EQ(nack.code, ErrorCode::kInvalidField);
  EXPECT_NE(nack.reason.find("'dims'"), std::string::npos);

  const Nack garbage = make_nack("\x01\x02 not json", {ErrorCode::kMalformed, "header frame is not valid JSON"});
  EXPECT_EQ(garbage.of, ReplyTo::kUnknown);
  EXPECT_TRUE(garbage.session.empty());
  EXPECT_FALSE(garbage.index.has_value());
  const auto reply = parse_reply(serialize(garbage));
  ASSERT_TRUE(reply.ok()) << reply.error.reason;
  EXPECT_EQ(std::get<Nack>(*reply.value), garbage);
}

}  // namespace
}  // namespace rtf::stream
