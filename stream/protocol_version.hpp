// Wire protocol version of the rtfmri ingest and result streams (see docs/protocol.md).
#pragma once

namespace rtf::stream {

inline constexpr int kProtocolVersion = 1;
const char* protocol_name();

}  // namespace rtf::stream
