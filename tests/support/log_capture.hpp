// LogCapture: spdlog's default logger replaced, for as long as the object lives, by one that keeps "LEVEL: message"
// lines in memory, so that a test can count and read what was logged (e.g. that a failure is logged once, not per row).
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace rtf::test {

class LogCapture {
 public:
  LogCapture();
  ~LogCapture();  // the previous default logger back
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> lines() const;

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace rtf::test
