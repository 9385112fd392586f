// Reading fields of an untrusted JSON object: the helpers the protocol's parsers share (json_fields.hpp).
#include "stream/protocol/json_fields.hpp"

#include <fmt/format.h>

namespace rtf::stream::detail {

using nlohmann::json;

ProtocolError field_error(ErrorCode code, std::string_view name, const std::string& problem) {
  return {code, fmt::format("field '{}': {}", name, problem)};
}

ProtocolError missing(std::string_view name) {
  return field_error(ErrorCode::kMissingField, name, "required");
}

std::string show(const json& value) {
  if (value.is_structured()) return value.is_array() ? fmt::format("an array of {}", value.size()) : "an object";
  return sanitize(dump(value), 60);
}

const json* find(const json& obj, std::string_view name) {
  const auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

std::optional<int64_t> as_int(const json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return value.get<int64_t>();
}

}  // namespace rtf::stream::detail
