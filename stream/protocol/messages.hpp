// Ingest protocol messages other than the VOLUME header (docs/protocol.md): END_OF_RUN from the sender, ACK and
// NACK from the server, and dispatch of a sender's first frame by its "type". Parsing never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "stream/protocol/volume_header.hpp"

namespace rtf::stream {

// END_OF_RUN: closes a run of num_volumes volumes (indices 0 .. num_volumes-1). One frame.
struct EndOfRun {
  int protocol = 1;
  std::string session;
  std::string run;
  int64_t num_volumes = 0;
  bool operator==(const EndOfRun&) const = default;
};

Parsed<EndOfRun> parse_end_of_run(std::string_view json, const ProtocolLimits& limits = {});
std::string serialize(const EndOfRun& message);

// What a reply refers to.
enum class ReplyTo { kVolume, kEndOfRun, kUnknown };  // "volume", "end_of_run", "unknown" (unparsable header)

// ACK: the volume is durably recorded (or, with duplicate, had already been), or the run is closed.
struct Ack {
  ReplyTo of = ReplyTo::kVolume;
  std::string session;
  std::string run;
  std::optional<int64_t> index;  // set for volumes
  bool duplicate = false;        // volume had already been recorded; this is a repeat ACK
  bool operator==(const Ack&) const = default;
};

// NACK: rejected; nothing was recorded. session/run/index echo what could be read from the rejected header
// (empty / unset when it could not be parsed that far).
struct Nack {
  ReplyTo of = ReplyTo::kUnknown;
  std::string session;
  std::string run;
  std::optional<int64_t> index;
  ErrorCode code = ErrorCode::kInternal;
  std::string reason;
  bool operator==(const Nack&) const = default;
};

std::string serialize(const Ack& ack);
std::string serialize(const Nack& nack);

using Reply = std::variant<Ack, Nack>;
// A server reply frame (for senders). Unknown fields are ignored here so that servers may add information.
Parsed<Reply> parse_reply(std::string_view json);

// A sender's message, dispatched on its "type" field.
using SenderMessage = std::variant<VolumeHeader, EndOfRun>;
Parsed<SenderMessage> parse_sender_header(std::string_view json, const ProtocolLimits& limits = {});

// NACK for a rejected sender header: echoes whichever of type/session/run/index are readable and valid in it.
Nack make_nack(std::string_view rejected_json, const ProtocolError& error, size_t max_header_bytes = 64u << 10);

}  // namespace rtf::stream
