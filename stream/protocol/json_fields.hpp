// Reading fields of an untrusted JSON object, shared by the protocol's parsers (volume_header.cpp, the pyneal header in
// pyneal_message.cpp): the "field 'NAME': problem" error, a short description of a bad value, lookup without throwing,
// and the value as int64 where it is an integer that fits. Nothing here throws on bad input.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "stream/protocol/volume_header.hpp"

namespace rtf::stream::detail {

// Thrown from a JSON parser callback to stop parsing early; caught by the function that started the parse.
struct StopParse {
  std::string reason;
};

// {code, "field 'NAME': PROBLEM"}.
ProtocolError field_error(ErrorCode code, std::string_view name, const std::string& problem);

// A required field that is absent: kMissingField, "field 'NAME': required".
ProtocolError missing(std::string_view name);

// Short description of an untrusted value for error messages: "an object", "an array of N", or its JSON text
// (sanitized, at most 60 characters).
std::string show(const nlohmann::json& value);

// The field `name` of `obj`, or nullptr.
const nlohmann::json* find(const nlohmann::json& obj, std::string_view name);

// The value as int64 if it is a JSON integer that fits.
std::optional<int64_t> as_int(const nlohmann::json& value);

}  // namespace rtf::stream::detail
