// job_key: the settings line and the inputs' bytes as the parts of one content hash.
#include "core/scale/job_key.hpp"

#include "core/util/hash.hpp"

namespace rtf {

std::string job_key(std::string_view first, const std::vector<std::string_view>& parts) {
  std::vector<std::string_view> all;
  all.reserve(parts.size() + 1);
  all.push_back(first);
  all.insert(all.end(), parts.begin(), parts.end());
  return hash_hex(all);
}

}  // namespace rtf
