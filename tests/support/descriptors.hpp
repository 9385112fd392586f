// File-descriptor helpers for the tests of bounded resources: how many descriptors this process holds (from
// /proc/self/fd), a lowered RLIMIT_NOFILE for the length of a scope, and taking every descriptor left.
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <vector>

namespace rtf::test {

size_t open_descriptors();  // entries of /proc/self/fd, less the one reading it

// Lowers RLIMIT_NOFILE's soft limit to `spare` descriptors above the highest one open now; restores it on destruction.
class LowDescriptorLimit {
 public:
  explicit LowDescriptorLimit(int spare);
  ~LowDescriptorLimit();
  LowDescriptorLimit(const LowDescriptorLimit&) = delete;
  LowDescriptorLimit& operator=(const LowDescriptorLimit&) = delete;

 private:
  struct rlimit saved_ {};
};

// Opens /dev/null until the process runs out of descriptors (EMFILE), as something else holding them would; closes
// them on destruction or release(). Use it under a LowDescriptorLimit.
class DescriptorHog {
 public:
  DescriptorHog();
  ~DescriptorHog() { release(); }
  DescriptorHog(const DescriptorHog&) = delete;
  DescriptorHog& operator=(const DescriptorHog&) = delete;
  void release();
  void release(size_t n);                        // closes n of them (as many as it holds at most)
  bool exhausted() const { return exhausted_; }  // the last open failed with EMFILE

 private:
  std::vector<int> fds_;
  bool exhausted_ = false;
};

}  // namespace rtf::test
