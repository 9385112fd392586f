// TcpFeedbackServer: Asio acceptor, one session per client with a bounded drop-oldest queue, async writes.
#include "stream/output/tcp_feedback_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <mutex>
#include <set>

#include "stream/output/asio.hpp"

namespace rtf::stream {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

struct Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket s, size_t queue_capacity) : socket(std::move(s)), capacity(queue_capacity) {}
  tcp::socket socket;
  size_t capacity;
  std::deque<std::shared_ptr<const std::string>> queue;
  bool writing = false;
  bool closed = false;
};

}  // namespace

struct TcpFeedbackServer::Impl {
  explicit Impl(const TcpFeedbackOptions& o) : options(o), acceptor(io), work(asio::make_work_guard(io)) {}

  void accept() {
    acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted) spdlog::warn("feedback TCP accept: {}", ec.message());
        if (acceptor.is_open() && ec != asio::error::operation_aborted) accept();
        return;
      }
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // a line per TR: send it now, not with the next
      auto session = std::make_shared<Session>(std::move(socket), options.queue_lines);
      sessions.insert(session);
      ++connections;
      spdlog::info("feedback TCP: client connected ({} now)", sessions.size());
      watch(session);
      accept();
    });
  }

  // Reads (and ignores) whatever the client sends, to notice when it goes away.
  void watch(const std::shared_ptr<Session>& s) {
    auto buffer = std::make_shared<std::array<char, 256>>();
    s->socket.async_read_some(asio::buffer(*buffer), [this, s, buffer](const boost::system::error_code& ec, size_t) {
      if (ec) {
        close(s);
        return;
      }
      watch(s);
    });
  }

  void close(const std::shared_ptr<Session>& s) {
    if (s->closed) return;
    s->closed = true;
    boost::system::error_code ignored;
    s->socket.shutdown(tcp::socket::shutdown_both, ignored);
    s->socket.close(ignored);
    sessions.erase(s);
    ++disconnects;
    spdlog::info("feedback TCP: client left ({} now)", sessions.size());
  }

  void deliver(const std::shared_ptr<const std::string>& line) {
    for (const auto& s : std::set<std::shared_ptr<Session>>(sessions)) {
      if (s->queue.size() >= s->capacity) {
        s->queue.pop_front();
        ++dropped;
      }
      s->queue.push_back(line);
      if (!s->writing) write(s);
    }
  }

  void write(const std::shared_ptr<Session>& s) {
    if (s->closed || s->queue.empty()) {
      s->writing = false;
      return;
    }
    s->writing = true;
    auto line = s->queue.front();
    s->queue.pop_front();
    asio::async_write(s->socket, asio::buffer(*line), [this, s, line](const boost::system::error_code& ec, size_t) {
      if (ec) {
        close(s);
        return;
      }
      write(s);
    });
  }

  TcpFeedbackOptions options;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::set<std::shared_ptr<Session>> sessions;  // I/O thread only
  std::thread thread;
  std::atomic<int64_t> connections{0}, published{0}, dropped{0}, disconnects{0};
  std::atomic<bool> stopped{false};
};

TcpFeedbackServer::TcpFeedbackServer(TcpFeedbackOptions options) : impl_(std::make_unique<Impl>(options)) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options.address, ec);
  if (ec) throw std::runtime_error(fmt::format("feedback TCP: '{}' is not an IP address", options.address));
  const tcp::endpoint endpoint(address, options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("feedback TCP: cannot listen on {}:{}: {}", options.address, options.port, ec.message()));
  }
  port_ = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

TcpFeedbackServer::~TcpFeedbackServer() {
  stop();
}

void TcpFeedbackServer::publish(std::string line) {
  if (impl_->stopped) return;
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  auto shared = std::make_shared<const std::string>(std::move(line));
  ++impl_->published;
  asio::post(impl_->io, [impl = impl_.get(), shared] { impl->deliver(shared); });
}

void TcpFeedbackServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  asio::post(impl_->io, [impl = impl_.get()] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    for (const auto& s : std::set<std::shared_ptr<Session>>(impl->sessions)) impl->close(s);
    impl->work.reset();
  });
  if (impl_->thread.joinable()) impl_->thread.join();
}

TcpFeedbackCounters TcpFeedbackServer::counters() const {
  TcpFeedbackCounters c;
  c.connections = impl_->connections;
  c.disconnects = impl_->disconnects;
  c.clients = c.connections - c.disconnects;
  c.lines_published = impl_->published;
  c.lines_dropped = impl_->dropped;
  return c;
}

}  // namespace rtf::stream
