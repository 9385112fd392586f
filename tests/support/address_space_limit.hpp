// AddressSpaceLimit: a ceiling on this process's address space (RLIMIT_AS) for the life of the object, so that a test
// can show that some work does not need memory in proportion to a file's size: an allocation past the ceiling fails
// (std::bad_alloc) instead of taking gigabytes from the machine. The ceiling is the address space in use when it is
// set (/proc/self/status VmSize) plus `headroom`; the previous limit comes back on destruction. Threads started
// meanwhile (each reserves its stack) count against it: leave them room.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace rtf::test {

class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(uint64_t headroom_bytes);
  ~AddressSpaceLimit();
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

  uint64_t ceiling() const { return ceiling_; }

 private:
  rlimit previous_{};
  uint64_t ceiling_ = 0;
};

// The process's address space now (VmSize), in bytes.
uint64_t address_space_in_use();

}  // namespace rtf::test
