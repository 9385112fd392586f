// Shared body of the protocol-header fuzz target (fuzz_volume_header.cpp) and its corpus replay test
// (tests/stream/test_header_corpus_replay.cpp). Any input must be parsed or rejected with a reason, never crash or
// throw; a header that parses must survive serialize -> parse unchanged; the sender-message dispatch must agree
// with the volume parser; a NACK built from a rejected input must round-trip through parse_reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::fuzz {

enum class HeaderOutcome { kVolume, kEndOfRun, kRejected };

// Runs every check on one input. Returns the first violated invariant ("" if none) and sets `outcome`.
inline std::string check_header_input(const uint8_t* data, size_t size, HeaderOutcome& outcome) {
  using namespace rtf::stream;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ProtocolLimits limits;
  limits.max_header_bytes = 16u << 10;
  const ParseResult parsed = parse_volume_header(text, limits);
  if (parsed.ok() != parsed.error.ok()) return "parse result and error disagree";
  const auto message = parse_sender_header(text, limits);
  outcome = HeaderOutcome::kRejected;
  if (parsed.ok()) {
    outcome = HeaderOutcome::kVolume;
    const ParseResult again = parse_volume_header(serialize(*parsed.value), limits);
    if (!again.ok() || !(*again.value == *parsed.value)) return "volume header does not survive serialize -> parse";
    if (!message.ok() || !std::holds_alternative<VolumeHeader>(*message.value)) return "dispatch disagrees";
    if (!(std::get<VolumeHeader>(*message.value) == *parsed.value)) return "dispatch parsed differently";
  } else {
    if (parsed.error.reason.empty()) return "rejection without a reason";
    const Nack nack = make_nack(text, parsed.error, limits.max_header_bytes);
    const auto reply = parse_reply(serialize(nack));
    if (!reply.ok() || !std::holds_alternative<Nack>(*reply.value) || !(std::get<Nack>(*reply.value) == nack)) {
      return "NACK does not round-trip";
    }
  }
  if (message.ok() && std::holds_alternative<EndOfRun>(*message.value)) {
    outcome = HeaderOutcome::kEndOfRun;
    const auto& eor = std::get<EndOfRun>(*message.value);
    const auto again = parse_end_of_run(serialize(eor), limits);
    if (!again.ok() || !(*again.value == eor)) return "end_of_run does not survive serialize -> parse";
  }
  if (!message.ok() && message.error.reason.empty()) return "dispatch rejection without a reason";
  return {};
}

}  // namespace rtf::fuzz
