// File-descriptor helpers for the tests of bounded resources.
#include "tests/support/descriptors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace rtf::test {

namespace {

int highest_descriptor() {
  int highest = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::stoi(e.path().filename().string()));
  }
  return highest;
}

}  // namespace

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n - 1;  // the iterator's own
}

LowDescriptorLimit::LowDescriptorLimit(int spare) {
  if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0) throw std::runtime_error("getrlimit(RLIMIT_NOFILE) failed");
  struct rlimit low = saved_;
  low.rlim_cur = static_cast<rlim_t>(highest_descriptor()) + 1 + static_cast<rlim_t>(spare);
  if (::setrlimit(RLIMIT_NOFILE, &low) != 0) throw std::runtime_error("setrlimit(RLIMIT_NOFILE) failed");
}

LowDescriptorLimit::~LowDescriptorLimit() {
  ::setrlimit(RLIMIT_NOFILE, &saved_);
}

DescriptorHog::DescriptorHog() {
  for (;;) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      exhausted_ = errno == EMFILE;
      return;
    }
    fds_.push_back(fd);
    if (fds_.size() > 100000) return;  // no low limit in force: give up rather than take them all
  }
}

void DescriptorHog::release() {
  release(fds_.size());
}

void DescriptorHog::release(size_t n) {
  for (; n > 0 && !fds_.empty(); --n) {
    ::close(fds_.back());
    fds_.pop_back();
  }
}

}  // namespace rtf::test
