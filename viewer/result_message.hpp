// Decoding one per-TR message of the server's results stream (ZeroMQ PUB, docs/protocol.md §8) into a TrUpdate.
// Never throws: a malformed message (bad JSON, frames that disagree with the header's list) gives an error text.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "viewer/viewer_data.hpp"

namespace rtf::viewer {

struct DecodeError {
  std::string reason;
};

// `parts`: the message's frames after the topic: the JSON header, then the binary frames.
std::variant<TrUpdate, DecodeError> decode_result_message(std::string_view header_json,
                                                          const std::vector<std::span<const std::byte>>& frames);

}  // namespace rtf::viewer
