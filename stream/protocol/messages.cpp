// END_OF_RUN, ACK and NACK messages of the ingest protocol, and dispatch of sender headers by "type".
#include "stream/protocol/messages.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "stream/protocol_version.hpp"

namespace rtf::stream {

using nlohmann::json;

namespace {

std::string_view reply_to_wire(ReplyTo of) {
  switch (of) {
    case ReplyTo::kVolume:
      return "volume";
    case ReplyTo::kEndOfRun:
      return "end_of_run";
    case ReplyTo::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<ReplyTo> reply_to_from_wire(std::string_view name) {
  if (name == "volume") return ReplyTo::kVolume;
  if (name == "end_of_run") return ReplyTo::kEndOfRun;
  if (name == "unknown") return ReplyTo::kUnknown;
  return std::nullopt;
}

ProtocolError read_end_of_run(const json& obj, const ProtocolLimits& limits, EndOfRun& out) {
  ProtocolError e = detail::check_protocol_and_type(obj, "end_of_run");
  if (e.ok()) e = detail::check_fields(obj, {"protocol", "type", "session", "run", "num_volumes"});
  if (e.ok()) e = detail::read_id(obj, "session", out.session);
  if (e.ok()) e = detail::read_id(obj, "run", out.run);
  if (e.ok()) e = detail::read_int(obj, "num_volumes", 0, limits.max_volumes, out.num_volumes);
  out.protocol = kProtocolVersion;
  return e;
}

// Fields common to ACK and NACK.
json reply_json(std::string_view type, ReplyTo of, const std::string& session, const std::string& run,
                const std::optional<int64_t>& index) {
  json j = json::object();
  j["protocol"] = kProtocolVersion;
  j["type"] = type;
  j["of"] = reply_to_wire(of);
  if (!session.empty()) j["session"] = session;
  if (!run.empty()) j["run"] = run;
  if (index) j["index"] = *index;
  return j;
}

// Optional id, index and "of" of a reply; absent fields stay empty.
ProtocolError read_reply_common(const json& obj, ReplyTo& of, std::string& session, std::string& run,
                                std::optional<int64_t>& index) {
  std::string of_name;
  ProtocolError e = detail::read_string(obj, "of", 32, of_name);
  if (!e.ok()) return e;
  const auto parsed_of = reply_to_from_wire(of_name);
  if (!parsed_of) return {ErrorCode::kInvalidField, "field 'of': must be \"volume\", \"end_of_run\" or \"unknown\""};
  of = *parsed_of;
  if (obj.contains("session")) e = detail::read_id(obj, "session", session);
  if (e.ok() && obj.contains("run")) e = detail::read_id(obj, "run", run);
  if (e.ok() && obj.contains("index")) {
    int64_t i = 0;
    e = detail::read_int(obj, "index", 0, INT64_MAX, i);
    if (e.ok()) index = i;
  }
  return e;
}

}  // namespace

Parsed<EndOfRun> parse_end_of_run(std::string_view text, const ProtocolLimits& limits) {
  auto parsed = detail::parse_json_object(text, limits.max_header_bytes);
  if (!parsed.ok()) return Parsed<EndOfRun>::failure(parsed.error.code, std::move(parsed.error.reason));
  EndOfRun message;
  ProtocolError e = read_end_of_run(*parsed.value, limits, message);
  if (!e.ok()) return Parsed<EndOfRun>::failure(e.code, std::move(e.reason));
  return {std::move(message), {}};
}

std::string serialize(const EndOfRun& m) {
  json j = json::object();
  j["protocol"] = m.protocol;
  j["type"] = "end_of_run";
  j["session"] = m.session;
  j["run"] = m.run;
  j["num_volumes"] = m.num_volumes;
  return detail::dump(j);
}

std::string serialize(const Ack& ack) {
  json j = reply_json("ack", ack.of, ack.session, ack.run, ack.index);
  if (ack.duplicate) j["duplicate"] = true;
  return detail::dump(j);
}

std::string serialize(const Nack& nack) {
  json j = reply_json("nack", nack.of, nack.session, nack.run, nack.index);
  j["code"] = to_string(nack.code);
  j["reason"] = nack.reason;
  return detail::dump(j);
}

Parsed<Reply> parse_reply(std::string_view text) {
  using Result = Parsed<Reply>;
  auto parsed = detail::parse_json_object(text, 64u << 10);
  if (!parsed.ok()) return Result::failure(parsed.error.code, std::move(parsed.error.reason));
  const json& obj = *parsed.value;
  const bool is_ack = obj.contains("type") && obj["type"] == "ack";
  ProtocolError e = detail::check_protocol_and_type(obj, is_ack ? "ack" : "nack");
  if (!e.ok()) return Result::failure(e.code, std::move(e.reason));
  if (is_ack) {
    Ack ack;
    e = read_reply_common(obj, ack.of, ack.session, ack.run, ack.index);
    if (e.ok() && obj.contains("duplicate")) e = detail::read_bool(obj, "duplicate", ack.duplicate);
    if (!e.ok()) return Result::failure(e.code, std::move(e.reason));
    return {Reply{std::move(ack)}, {}};
  }
  Nack nack;
  e = read_reply_common(obj, nack.of, nack.session, nack.run, nack.index);
  std::string code;
  if (e.ok()) e = detail::read_string(obj, "code", 64, code);
  if (e.ok()) e = detail::read_string(obj, "reason", 64u << 10, nack.reason);
  if (!e.ok()) return Result::failure(e.code, std::move(e.reason));
  // A code this version does not know (from a newer server) is kept as kInternal; the reason still explains it.
  nack.code = error_code_from_string(code).value_or(ErrorCode::kInternal);
  return {Reply{std::move(nack)}, {}};
}

Parsed<SenderMessage> parse_sender_header(std::string_view text, const ProtocolLimits& limits) {
  using Result = Parsed<SenderMessage>;
  auto parsed = detail::parse_json_object(text, limits.max_header_bytes);
  if (!parsed.ok()) return Result::failure(parsed.error.code, std::move(parsed.error.reason));
  const json& obj = *parsed.value;
  const auto type = obj.find("type");
  ProtocolError e;
  try {
    if (type != obj.end() && *type == "end_of_run") {
      EndOfRun message;
      e = read_end_of_run(obj, limits, message);
      if (e.ok()) return {SenderMessage{std::move(message)}, {}};
    } else {
      VolumeHeader header;
      e = detail::read_volume(obj, limits, header);
      if (e.ok()) return {SenderMessage{std::move(header)}, {}};
    }
  } catch (const std::exception& ex) {  // not expected: every access is type-checked first
    e = {ErrorCode::kMalformed, "header frame: " + detail::sanitize(ex.what())};
  }
  return Result::failure(e.code, std::move(e.reason));
}

Nack make_nack(std::string_view rejected_json, const ProtocolError& error, size_t max_header_bytes) {
  Nack nack;
  nack.code = error.ok() ? ErrorCode::kInternal : error.code;
  nack.reason = error.reason;
  auto parsed = detail::parse_json_object(rejected_json, max_header_bytes);
  if (!parsed.ok()) return nack;
  const json& obj = *parsed.value;
  if (const auto t = obj.find("type"); t != obj.end() && t->is_string()) {
    nack.of = reply_to_from_wire(t->get_ref<const std::string&>()).value_or(ReplyTo::kUnknown);
  }
  std::string id;
  if (detail::read_id(obj, "session", id).ok()) nack.session = id;
  if (detail::read_id(obj, "run", id).ok()) nack.run = id;
  int64_t index = 0;
  if (detail::read_int(obj, "index", 0, INT64_MAX, index).ok()) nack.index = index;
  return nack;
}

}  // namespace rtf::stream
