// Wall-clock seconds since construction (steady clock): the elapsed times the commands log and report.
#pragma once

#include <chrono>

namespace rtf {

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace rtf
