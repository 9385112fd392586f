// Progress of a long loop on the log: "WHAT done/total, elapsed s, about N s left".
#pragma once

#include <cstdint>
#include <string>

#include "core/util/stopwatch.hpp"

namespace rtf {

// Logs at most once per `every` seconds and at the end. Call it with the work done so far.
class ProgressLog {
 public:
  explicit ProgressLog(std::string what, double every = 1.0) : what_(std::move(what)), every_(every) {}
  void operator()(int64_t done, int64_t total);

 private:
  std::string what_;
  double every_;
  Stopwatch clock_;
  double last_ = 0.0;
};

}  // namespace rtf
