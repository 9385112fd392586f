// The per-TR outputs: the TCP feedback server (lines in order to every client; a client that never reads neither
// blocks publish() nor the other clients, and loses its oldest lines; disconnects; clean stop), UDP datagrams, and the
// ZeroMQ PUB results stream (topic, JSON header describing the binary frames, the frames' bytes).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "stream/output/result_publisher.hpp"
#include "stream/output/tcp_feedback_server.hpp"
#include "stream/output/udp_feedback_sender.hpp"
#include "stream/output/zmq_connection_monitor.hpp"
#include "tests/support/eventually.hpp"

namespace rtf::stream {
namespace {

using namespace std::chrono_literals;

// A blocking TCP client on 127.0.0.1:port with a receive timeout (generous: it only turns a hang into a failure).
class Client {
 public:
  explicit Client(uint16_t port, int receive_buffer = 0) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    timeval tv{60, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  // Reads until `n` lines have arrived (or the timeout); returns them.
  std::vector<std::string> lines(size_t n) {
    std::vector<std::string> out;
    char buf[4096];
    while (out.size() < n) {
      const auto newline = pending_.find('\n');
      if (newline != std::string::npos) {
        out.push_back(pending_.substr(0, newline));
        pending_.erase(0, newline + 1);
        continue;
      }
      const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) break;
      pending_.append(buf, static_cast<size_t>(r));
    }
    return out;
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string pending_;
};

using test::eventually;

TEST(TcpFeedbackServer, EveryClientGetsEveryLineInOrder) {
  TcpFeedbackServer server({"127.0.0.1", 0, 64});
  Client a(server.port()), b(server.port());
  ASSERT_TRUE(a.connected() && b.connected());
  ASSERT_TRUE(eventually([&] { return server.counters().clients == 2; }));
  for (int i = 0; i < 5; ++i) server.publish(R"({"volume": )" + std::to_string(i) + "}");
  for (Client* c : {&a, &b}) {
    const auto got = c->lines(5);
    ASSERT_EQ(got.size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], R"({"volume": )" + std::to_string(i) + "}");
  }
  EXPECT_EQ(server.counters().lines_published, 5);
}

TEST(TcpFeedbackServer, AClientThatNeverReadsBlocksNothing) {
  TcpFeedbackServer server({"127.0.0.1", 0, 8});
  Client stuck(server.port(), 4096), reader(server.port());
  ASSERT_TRUE(eventually([&] { return server.counters().clients == 2; }));
  const std::string padding(2000, 'x');
  const int n = 5000;  // 10 MB: far more than the stuck client's socket buffers and queue hold
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    server.publish(std::to_string(i) + " " + padding);
    if (i % 50 == 0) reader.lines(1);  // the reader keeps up (roughly) and must keep receiving
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // publish() never waited for the stuck client: it would never have returned (the bound only turns a hang into a
  // failure; it says nothing about speed).
  EXPECT_LT(seconds, static_cast<double>(test::kPatience.count()));
  // The stuck client's queue overflowed: lines were dropped for it, oldest first.
  EXPECT_TRUE(eventually([&] { return server.counters().lines_dropped > 0; }));
  server.publish("last");
  bool saw_last = false;
  for (int i = 0; i < n && !saw_last; ++i) {
    const auto got = reader.lines(1);
    if (got.empty()) break;
    saw_last = got[0] == "last";
  }
  EXPECT_TRUE(saw_last);  // the reading client still gets the newest line
}

TEST(TcpFeedbackServer, DisconnectsAndStop) {
  auto server = std::make_unique<TcpFeedbackServer>(TcpFeedbackOptions{"127.0.0.1", 0, 4});
  {
    Client gone(server->port());
    ASSERT_TRUE(eventually([&] { return server->counters().clients == 1; }));
  }  // closed
  ASSERT_TRUE(eventually([&] { return server->counters().disconnects == 1; }));
  server->publish("nobody listens");
  Client later(server->port());
  ASSERT_TRUE(eventually([&] { return server->counters().clients == 1; }));
  server->publish("hello");
  EXPECT_EQ(later.lines(1), std::vector<std::string>{"hello"});
  const auto t0 = std::chrono::steady_clock::now();
  server.reset();  // stop() with a client connected
  // stop() closes the client rather than waiting for it (a generous bound: a hang, not speed).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            static_cast<double>(test::kPatience.count()));
  EXPECT_TRUE(later.lines(1).empty());  // the connection was closed
  EXPECT_THROW(TcpFeedbackServer({"not-an-address", 0, 4}), std::runtime_error);
}

TEST(UdpFeedbackSender, DatagramsArrive) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  UdpFeedbackSender sender({parse_udp_destination("127.0.0.1:" + std::to_string(ntohs(a.sin_port)))});
  for (int i = 0; i < 3; ++i) sender.send("feedback " + std::to_string(i));
  for (int i = 0; i < 3; ++i) {
    char buf[256];
    const ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(r, 0);
    EXPECT_EQ(std::string(buf, static_cast<size_t>(r)), "feedback " + std::to_string(i));
  }
  ::close(fd);
  EXPECT_EQ(sender.sent(), 3);
  EXPECT_THROW(parse_udp_destination("localhost"), std::invalid_argument);
  EXPECT_THROW(parse_udp_destination("1.2.3.4:0"), std::invalid_argument);
  EXPECT_THROW(parse_udp_destination("1.2.3.4:99999"), std::invalid_argument);
  EXPECT_EQ(parse_udp_destination("[::1]:7000").host, "::1");
  EXPECT_THROW(UdpFeedbackSender({{"no.such.host", 7000}}), std::runtime_error);
}

TEST(ResultPublisher, HeaderDescribesTheFramesThatFollow) {
  zmq::context_t context(1);
  ResultPublisher pub(context, {"tcp://127.0.0.1:*", 16});
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, kResultTopic);
  sub.set(zmq::sockopt::rcvtimeo, 100);
  sub.connect(pub.endpoint());
  const std::vector<float> map{1.0f, -2.0f, 3.5f, 0.0f, 7.0f, 8.0f};
  const std::vector<float> matrix{1.0f, 0.5f, 0.5f, 1.0f};
  std::vector<zmq::message_t> parts;
  // A PUB drops messages until the subscription has propagated (ZeroMQ's slow joiner): publish until one arrives.
  for (int attempt = 0; attempt < 1200 && parts.empty(); ++attempt) {  // 100 ms each: up to test::kPatience
    pub.publish({{"volume", 7}}, {{"t_map", "float32", {3, 2, 1}, std::as_bytes(std::span(map))},
                                  {"connectivity", "float32", {2, 2}, std::as_bytes(std::span(matrix))}});
    zmq::message_t m;
    while (sub.recv(m)) {
      parts.push_back(std::move(m));
      if (!parts.back().more()) break;
    }
  }
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].to_string(), kResultTopic);
  const auto header = nlohmann::json::parse(parts[1].to_string());
  EXPECT_EQ(header["volume"], 7);
  EXPECT_GE(header["seq"].get<int64_t>(), 0);
  ASSERT_EQ(header["frames"].size(), 2u);
  EXPECT_EQ(header["frames"][0]["name"], "t_map");
  EXPECT_EQ(header["frames"][0]["shape"], nlohmann::json({3, 2, 1}));
  EXPECT_EQ(header["frames"][1]["bytes"], 16);
  ASSERT_EQ(parts[2].size(), map.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(parts[2].data(), map.data(), parts[2].size()), 0);
  EXPECT_EQ(std::memcmp(parts[3].data(), matrix.data(), 16), 0);
}

TEST(ZmqConnectionMonitor, ASubscriberKnowsWhenItsPublisherIsThere) {
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  ZmqConnectionMonitor connection(context, sub);
  sub.set(zmq::sockopt::subscribe, kResultTopic);
  sub.set(zmq::sockopt::rcvtimeo, 50);
  std::string endpoint;
  {
    zmq::context_t server_context(1);
    ResultPublisher pub(server_context, {"tcp://127.0.0.1:*", 16});
    endpoint = pub.endpoint();
    EXPECT_EQ(connection.poll(), 0);  // nothing connected yet
    sub.connect(endpoint);
    ASSERT_TRUE(connection.wait_connected(test::kPatience));
    EXPECT_EQ(connection.connected(), 1);
    zmq::message_t topic;
    EXPECT_TRUE(test::eventually([&] {
      pub.publish({{"volume", 1}}, {});
      return sub.recv(topic).has_value();
    }));
    EXPECT_EQ(topic.to_string(), kResultTopic);
  }  // the publisher goes away
  EXPECT_TRUE(test::eventually([&] { return connection.poll() == 0; }));
}

}  // namespace
}  // namespace rtf::stream
