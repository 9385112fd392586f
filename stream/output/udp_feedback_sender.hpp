// UdpFeedbackSender: the per-TR feedback line as one UDP datagram to each configured destination, for tools that
// expect datagrams (e.g. OpenNFT-style receivers, Presentation, PsychoPy scripts). Non-blocking: a datagram that
// cannot be sent at once is dropped and counted, never waited for. docs/protocol.md §8-9.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rtf::stream {

struct UdpDestination {
  std::string host = "127.0.0.1";  // an IPv4/IPv6 address
  uint16_t port = 5558;
};

// "HOST:PORT" (or "[V6]:PORT"). Throws std::invalid_argument naming the text.
UdpDestination parse_udp_destination(const std::string& text);

class UdpFeedbackSender {
 public:
  // Throws std::runtime_error naming a destination whose address is not valid.
  explicit UdpFeedbackSender(std::vector<UdpDestination> destinations);
  ~UdpFeedbackSender();
  UdpFeedbackSender(const UdpFeedbackSender&) = delete;
  UdpFeedbackSender& operator=(const UdpFeedbackSender&) = delete;

  // Sends `payload` (without a trailing newline) to every destination. Thread-compatible (call from one thread).
  void send(const std::string& payload);

  int64_t sent() const { return sent_; }
  int64_t failed() const { return failed_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t sent_ = 0, failed_ = 0;
};

}  // namespace rtf::stream
