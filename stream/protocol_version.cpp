// Protocol identification string used in headers and logs.
#include "stream/protocol_version.hpp"

namespace rtf::stream {
const char* protocol_name() {
  return "rtfmri-stream/1";
}
}  // namespace rtf::stream
