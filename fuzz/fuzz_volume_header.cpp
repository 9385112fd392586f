// libFuzzer target for the ingest protocol's header parsers: rtfmri-fuzz-volume-header (see scripts/fuzz.sh).
// Any input must be parsed or rejected with a reason, never crash or throw. Headers that parse must survive
// serialize -> parse unchanged; the same bytes through the sender-message dispatch must agree; and a NACK built
// from the input must round-trip through parse_reply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rtf::stream;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ProtocolLimits limits;
  limits.max_header_bytes = 16u << 10;
  const ParseResult parsed = parse_volume_header(text, limits);
  check(parsed.ok() == parsed.error.ok());
  const auto message = parse_sender_header(text, limits);
  if (parsed.ok()) {
    check(!parsed.error.reason.empty() || parsed.error.ok());
    const ParseResult again = parse_volume_header(serialize(*parsed.value), limits);
    check(again.ok() && *again.value == *parsed.value);
    check(message.ok() && std::holds_alternative<VolumeHeader>(*message.value));
    check(std::get<VolumeHeader>(*message.value) == *parsed.value);
  } else {
    check(!parsed.error.reason.empty());
    const Nack nack = make_nack(text, parsed.error, limits.max_header_bytes);
    const auto reply = parse_reply(serialize(nack));
    check(reply.ok() && std::holds_alternative<Nack>(*reply.value) && std::get<Nack>(*reply.value) == nack);
  }
  if (message.ok() && std::holds_alternative<EndOfRun>(*message.value)) {
    const auto& eor = std::get<EndOfRun>(*message.value);
    const auto again = parse_end_of_run(serialize(eor), limits);
    check(again.ok() && *again.value == eor);
  }
  return 0;
}
