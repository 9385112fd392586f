// RLIMIT_AS set from /proc/self/status's VmSize; see address_space_limit.hpp.
#include "tests/support/address_space_limit.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace rtf::test {

uint64_t address_space_in_use() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "VmSize:  123456 kB"
  }
  throw std::runtime_error("no VmSize in /proc/self/status");
}

AddressSpaceLimit::AddressSpaceLimit(uint64_t headroom_bytes) {
  if (getrlimit(RLIMIT_AS, &previous_) != 0) throw std::runtime_error(std::strerror(errno));
  ceiling_ = address_space_in_use() + headroom_bytes;
  rlimit lowered = previous_;
  if (lowered.rlim_cur == RLIM_INFINITY || lowered.rlim_cur > ceiling_) lowered.rlim_cur = ceiling_;
  if (setrlimit(RLIMIT_AS, &lowered) != 0) throw std::runtime_error(std::strerror(errno));
}

AddressSpaceLimit::~AddressSpaceLimit() {
  setrlimit(RLIMIT_AS, &previous_);
}

}  // namespace rtf::test
