// UdpFeedbackSender: one non-blocking Asio UDP socket per address family, send_to each destination.
#include "stream/output/udp_feedback_sender.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "stream/output/asio.hpp"

namespace rtf::stream {

namespace asio = boost::asio;
using asio::ip::udp;

UdpDestination parse_udp_destination(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument(fmt::format("UDP destination '{}': expected HOST:PORT", text));
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || ptr != last || port == 0 || port > 65535) {
    throw std::invalid_argument(fmt::format("UDP destination '{}': the port must be 1..65535", text));
  }
  return {host, static_cast<uint16_t>(port)};
}

struct UdpFeedbackSender::Impl {
  asio::io_context io;
  udp::socket v4{io}, v6{io};
  std::vector<udp::endpoint> endpoints;
};

UdpFeedbackSender::UdpFeedbackSender(std::vector<UdpDestination> destinations) : impl_(std::make_unique<Impl>()) {
  for (const UdpDestination& d : destinations) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(d.host, ec);
    if (ec) throw std::runtime_error(fmt::format("UDP destination {}:{}: not an IP address", d.host, d.port));
    impl_->endpoints.emplace_back(address, d.port);
    udp::socket& s = address.is_v4() ? impl_->v4 : impl_->v6;
    if (!s.is_open()) {
      s.open(address.is_v4() ? udp::v4() : udp::v6(), ec);
      if (!ec) s.non_blocking(true, ec);
      if (ec) throw std::runtime_error(fmt::format("UDP socket: {}", ec.message()));
    }
  }
}

UdpFeedbackSender::~UdpFeedbackSender() = default;

void UdpFeedbackSender::send(const std::string& payload) {
  for (const udp::endpoint& e : impl_->endpoints) {
    boost::system::error_code ec;
    udp::socket& s = e.address().is_v4() ? impl_->v4 : impl_->v6;
    s.send_to(asio::buffer(payload), e, 0, ec);
    if (ec) {
      ++failed_;
    } else {
      ++sent_;
    }
  }
}

}  // namespace rtf::stream
