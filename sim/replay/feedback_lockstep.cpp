// FeedbackLockstep: POSIX TCP client, non-blocking reads, one JSON object per line.
#include "sim/replay/feedback_lockstep.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace rtf::sim {

namespace {

// One connection attempt; -1 when refused or unreachable (the server may not be listening yet).
int try_connect(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw std::invalid_argument(fmt::format("lockstep: cannot resolve '{}': {}", host, ::gai_strerror(rc)));
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

}  // namespace

FeedbackLockstep::FeedbackLockstep(const std::string& host_port, double connect_timeout_s) : address_(host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) {
    throw std::invalid_argument(fmt::format("lockstep: '{}' is not HOST:PORT (the server's feedback_tcp)", host_port));
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = host_port.substr(colon + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(connect_timeout_s);
  while ((fd_ = try_connect(host, port)) < 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(fmt::format("lockstep: no feedback server on {} within {} s ({})", host_port,
                                           connect_timeout_s, std::strerror(errno)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

FeedbackLockstep::~FeedbackLockstep() {
  if (fd_ >= 0) ::close(fd_);
}

void FeedbackLockstep::read_available() {
  char buffer[65536];
  while (true) {
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0)
      throw std::runtime_error(fmt::format("lockstep: the feedback server on {} closed the connection", address_));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    throw std::runtime_error(fmt::format("lockstep: reading from {}: {}", address_, std::strerror(errno)));
  }
  size_t newline;
  while ((newline = pending_.find('\n')) != std::string::npos) {
    const nlohmann::json line = nlohmann::json::parse(pending_.substr(0, newline), nullptr, false);
    pending_.erase(0, newline + 1);
    ++lines_;
    if (!line.is_object() || !line.contains("run") || !line.contains("volume")) continue;
    if (!line["run"].is_string() || !line["volume"].is_number_integer()) continue;
    auto [it, fresh] = newest_.try_emplace(line["run"].get<std::string>(), line["volume"].get<int64_t>());
    if (!fresh) it->second = std::max(it->second, line["volume"].get<int64_t>());
  }
}

bool FeedbackLockstep::finished(const std::string& run, int64_t index) {
  read_available();
  const auto it = newest_.find(run);
  return it != newest_.end() && it->second >= index;
}

}  // namespace rtf::sim
