// LogCapture: an ostream sink installed as spdlog's default logger.
#include "tests/support/log_capture.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace rtf::test {

LogCapture::LogCapture() : previous_(spdlog::default_logger()) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
  sink->set_pattern("%l: %v");
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

LogCapture::~LogCapture() {
  spdlog::set_default_logger(previous_);
}

std::vector<std::string> LogCapture::lines() const {
  std::vector<std::string> out;
  std::istringstream in(text_.str());
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace rtf::test
