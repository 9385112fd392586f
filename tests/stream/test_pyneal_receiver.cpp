// ctest-label: unit
// pyneal compatibility over real ZeroMQ sockets: a sender written here behaves like pyneal_scanner (PAIR connect,
// handshake string echoed verbatim, send_json(header, SNDMORE) + send(array), one recv_string per volume) against a
// PynealReceiver running on its own thread. Volumes of int16 and float64 on an odd shape reach the handler with the
// right header and an x-fastest payload; malformed messages are answered and the loop goes on; STOP follows
// stop_after and a closed run; a sender that reconnects is served again (a second concurrent one is not). Every
// receive has a timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "stream/protocol/checksum.hpp"
#include "stream/pyneal/pyneal_message.hpp"
#include "stream/pyneal/pyneal_receiver.hpp"
#include "tests/support/eventually.hpp"

namespace rtf::stream::pyneal {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kReplyTimeoutMs = 60000;  // generous for a loaded machine: it only turns a hang into a failure
const std::array<std::array<double, 4>, 4> kAffine{
    {{-3.0, 0.0, 0.0, 90.0}, {0.0, 3.0, 0.0, -126.0}, {0.0, 0.0, 3.5, -72.0}, {0.0, 0.0, 0.0, 1.0}}};
const std::array<int64_t, 3> kShape{7, 5, 3};

struct Received {
  VolumeHeader header;
  std::vector<std::byte> payload;
};

// Records what arrives; accepts every volume unless told otherwise.
class RecordingHandler {
 public:
  VolumeHandler handler() {
    return [this](const VolumeHeader& h, std::vector<std::byte>&& payload, int64_t) -> Reply {
      std::lock_guard lock(mutex_);
      if (nack_) return Nack{ReplyTo::kVolume, h.session, h.run, h.index, nack_->code, nack_->reason};
      received_.push_back({h, std::move(payload)});
      return Ack{ReplyTo::kVolume, h.session, h.run, h.index, false};
    };
  }
  void answer_with(ProtocolError nack) {
    std::lock_guard lock(mutex_);
    nack_ = std::move(nack);
  }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  std::mutex mutex_;
  std::vector<Received> received_;
  std::optional<ProtocolError> nack_;
};

// A PynealReceiver on a free loopback port, running on its own thread for the life of the object.
class ReceiverFixture {
 public:
  explicit ReceiverFixture(PynealOptions options = {})
      : receiver_(with_defaults(std::move(options)), handler_.handler()) {
    thread_ = std::thread([this] { receiver_.run(); });
  }
  ~ReceiverFixture() {
    receiver_.stop();
    thread_.join();
  }
  PynealReceiver& receiver() { return receiver_; }
  RecordingHandler& handler() { return handler_; }
  std::string endpoint() const { return receiver_.endpoint(); }

 private:
  static PynealOptions with_defaults(PynealOptions o) {
    o.address = "tcp://127.0.0.1:*";
    o.session = "sub-01";
    o.run = "run-02";
    o.poll_ms = 10;
    o.linger_ms = 0;
    return o;
  }
  RecordingHandler handler_;
  PynealReceiver receiver_;
  std::thread thread_;
};

// What pyneal_scanner does, in C++.
class PynealLikeSender {
 public:
  explicit PynealLikeSender(const std::string& endpoint) : socket_(context_, zmq::socket_type::pair) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  void send_string(const std::string& text) { socket_.send(zmq::buffer(text)); }
  // send_json(header, zmq.SNDMORE); send(array)
  void send_volume(const std::string& header, std::span<const std::byte> data) {
    socket_.send(zmq::buffer(header), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(data.data(), data.size()));
  }
  void send_frames(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      socket_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  // recv_string with a timeout: nullopt when nothing came.
  std::optional<std::string> recv_string(int timeout_ms = kReplyTimeoutMs) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return std::nullopt;
    zmq::message_t m;
    if (!socket_.recv(m, zmq::recv_flags::dontwait)) return std::nullopt;
    return m.to_string();
  }
  // pyneal_scanner's handshake: send a string, expect it back unchanged.
  void handshake(const std::string& text = "hello from pyneal_scanner ") {
    send_string(text);
    const auto reply = recv_string();
    ASSERT_TRUE(reply.has_value()) << "no handshake reply";
    EXPECT_EQ(*reply, text);
  }
  void close() { socket_.close(); }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

// The header pyneal_scanner builds (json.dumps separators, affine as a string, TR as str(seconds)).
std::string pyneal_header(int64_t idx, const std::string& dtype, const std::array<int64_t, 3>& shape = kShape) {
  json rows = json::array();
  for (const auto& row : kAffine) rows.push_back(row);
  const json h = {{"volIdx", idx}, {"TR", "2.0"}, {"dtype", dtype}, {"shape", shape}, {"affine", rows.dump()}};
  return h.dump();
}

template <typename T>
std::vector<std::byte> c_ordered_volume(std::mt19937& rng) {
  std::vector<T> values(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2]));
  if constexpr (std::is_floating_point_v<T>) {
    std::normal_distribution<T> d(1000, 50);
    for (auto& v : values) v = d(rng);
  } else {
    std::uniform_int_distribution<int> d(-32768, 32767);
    for (auto& v : values) v = static_cast<T>(d(rng));
  }
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Sample (i, j, k) moved from C order to x-fastest order.
std::vector<std::byte> x_fastest(const std::vector<std::byte>& c_order, size_t b) {
  std::vector<std::byte> out(c_order.size());
  const auto [nx, ny, nz] = kShape;
  for (int64_t i = 0; i < nx; ++i)
    for (int64_t j = 0; j < ny; ++j)
      for (int64_t k = 0; k < nz; ++k)
        std::memcpy(&out[static_cast<size_t>((k * ny + j) * nx + i) * b],
                    &c_order[static_cast<size_t>((i * ny + j) * nz + k) * b], b);
  return out;
}

bool contains(const std::optional<std::string>& s, const std::string& what) {
  return s && s->find(what) != std::string::npos;
}

TEST(PynealReceiver, HandshakeIsEchoedVerbatim) {
  ReceiverFixture server;
  PynealLikeSender sender(server.endpoint());
  sender.handshake("hello from pyneal_scanner ");  // Siemens/Philips adapters: trailing space included
  sender.handshake("hello from pyneal_scanner");
  sender.handshake("h\xc3\xa9llo \xe2\x9c\x93");  // UTF-8
  EXPECT_EQ(server.receiver().counters().handshakes, 3);
  EXPECT_EQ(server.receiver().counters().rejected, 0);
}

TEST(PynealReceiver, Int16AndFloat64VolumesReachTheHandler) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  ReceiverFixture server;
  PynealLikeSender sender(server.endpoint());
  sender.handshake();
  std::vector<std::pair<std::string, std::vector<std::byte>>> sent;
  for (int64_t idx = 0; idx < 5; ++idx) {
    const std::string dtype = idx < 3 ? "int16" : "float64";
    auto data = dtype == "int16" ? c_ordered_volume<int16_t>(rng) : c_ordered_volume<double>(rng);
    sender.send_volume(pyneal_header(idx, dtype), data);
    const auto reply = sender.recv_string();
    ASSERT_TRUE(reply.has_value()) << "no reply to volume " << idx;
    EXPECT_EQ(*reply, "received volIdx " + std::to_string(idx));  // what pyneal's own receiver answers
    sent.emplace_back(dtype, std::move(data));
  }
  const auto received = server.handler().received();
  ASSERT_EQ(received.size(), 5u);
  for (size_t idx = 0; idx < 5; ++idx) {
    SCOPED_TRACE(testing::Message() << "volume " << idx);
    const VolumeHeader& h = received[idx].header;
    const bool is_int = sent[idx].first == "int16";
    EXPECT_EQ(h.session, "sub-01");
    EXPECT_EQ(h.run, "run-02");
    EXPECT_EQ(h.index, static_cast<int64_t>(idx));
    EXPECT_EQ(h.dims, kShape);
    EXPECT_EQ(h.datatype, is_int ? DataType::kInt16 : DataType::kFloat64);
    EXPECT_EQ(h.affine, kAffine);
    EXPECT_DOUBLE_EQ(h.voxel_mm[0], 3.0);
    EXPECT_DOUBLE_EQ(h.voxel_mm[1], 3.0);
    EXPECT_DOUBLE_EQ(h.voxel_mm[2], 3.5);
    EXPECT_DOUBLE_EQ(h.tr_s, 2.0);
    EXPECT_EQ(h.payload_bytes, sent[idx].second.size());
    EXPECT_EQ(received[idx].payload, x_fastest(sent[idx].second, is_int ? 2 : 8));
    EXPECT_EQ(h.checksum, crc32(received[idx].payload));
  }
  const PynealCounters c = server.receiver().counters();
  EXPECT_EQ(c.received, 5);
  EXPECT_EQ(c.acked, 5);
  EXPECT_EQ(c.rejected, 0);
  EXPECT_EQ(c.stops, 0);
}

TEST(PynealReceiver, MalformedMessagesAreAnsweredAndTheLoopGoesOn) {
  ReceiverFixture server;
  PynealLikeSender sender(server.endpoint());
  sender.handshake();
  const std::vector<std::byte> ok_data(static_cast<size_t>(7 * 5 * 3 * 2));

  sender.send_frames({"{not json", "xx"});  // header frame that is not JSON
  auto reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK: malformed")) << reply.value_or("(none)");

  sender.send_volume(pyneal_header(1, "int8"), ok_data);  // unsupported dtype; volIdx readable
  reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK volIdx 1: invalid_field")) << reply.value_or("(none)");
  EXPECT_TRUE(contains(reply, "dtype")) << reply.value_or("(none)");

  sender.send_volume(pyneal_header(2, "int16"), std::span(ok_data).first(ok_data.size() - 1));  // short data
  reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK volIdx 2: payload_size")) << reply.value_or("(none)");

  sender.send_frames({pyneal_header(3, "int16"), "a", "b"});  // three frames
  reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK: bad_frames")) << reply.value_or("(none)");

  sender.send_frames({std::string("\x00\xff\x01garbage", 10)});  // binary single frame
  reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK: malformed")) << reply.value_or("(none)");

  // A NACK never says STOP by accident, even when it quotes the sender.
  sender.send_volume(pyneal_header(4, "STOP"), ok_data);
  reply = sender.recv_string();
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(contains(reply, "NACK volIdx 4")) << *reply;
  EXPECT_EQ(reply->find("STOP"), std::string::npos) << *reply;

  // The loop is still there, and a good volume goes through.
  sender.send_volume(pyneal_header(0, "int16"), ok_data);
  reply = sender.recv_string();
  EXPECT_EQ(reply.value_or("(none)"), "received volIdx 0");
  const PynealCounters c = server.receiver().counters();
  EXPECT_EQ(c.rejected, 6);
  EXPECT_EQ(c.acked, 1);
  EXPECT_EQ(server.handler().received().size(), 1u);
}

TEST(PynealReceiver, HeaderAndDataAsSeparateMessagesWorkLikePyneal) {
  // pyneal's receiver reads header and data with two recv calls, so a sender without SNDMORE works there too.
  ReceiverFixture server;
  PynealLikeSender sender(server.endpoint());
  sender.handshake();
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2), std::byte{1});
  sender.send_string(pyneal_header(0, "int16"));
  EXPECT_FALSE(sender.recv_string(100).has_value()) << "no reply before the data";
  sender.send_frames({std::string(reinterpret_cast<const char*>(data.data()), data.size())});
  EXPECT_EQ(sender.recv_string().value_or("(none)"), "received volIdx 0");
  EXPECT_EQ(server.handler().received().size(), 1u);
}

TEST(PynealReceiver, StopAfterTheLastVolume) {
  PynealOptions options;
  options.stop_after = 3;
  ReceiverFixture server(options);
  PynealLikeSender sender(server.endpoint());
  sender.handshake();
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2));
  for (int64_t idx = 0; idx < 2; ++idx) {
    sender.send_volume(pyneal_header(idx, "int16"), data);
    EXPECT_EQ(sender.recv_string().value_or("(none)"), "received volIdx " + std::to_string(idx));
  }
  EXPECT_FALSE(server.receiver().stop_sent());
  sender.send_volume(pyneal_header(2, "int16"), data);
  EXPECT_EQ(sender.recv_string().value_or("(none)"), "received volIdx 2 STOP");  // as pyneal's receiver says it
  EXPECT_TRUE(server.receiver().stop_sent());
  // A volume past the end is refused, again with STOP.
  sender.send_volume(pyneal_header(3, "int16"), data);
  const auto reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK volIdx 3: index_out_of_range")) << reply.value_or("(none)");
  EXPECT_TRUE(contains(reply, "STOP")) << reply.value_or("(none)");
  EXPECT_EQ(server.handler().received().size(), 3u);
  EXPECT_EQ(server.receiver().counters().stops, 2);
}

TEST(PynealReceiver, ReturnAfterStopEndsTheLoop) {
  RecordingHandler handler;
  PynealOptions options;
  options.address = "tcp://127.0.0.1:*";
  options.stop_after = 1;
  options.return_after_stop = true;
  options.poll_ms = 10;
  PynealReceiver receiver(options, handler.handler());
  std::thread thread([&receiver] { receiver.run(); });
  PynealLikeSender sender(receiver.endpoint());
  sender.handshake();
  sender.send_volume(pyneal_header(0, "int16"), std::vector<std::byte>(7 * 5 * 3 * 2));
  const auto reply = sender.recv_string();
  EXPECT_EQ(reply.value_or("(none)"), "received volIdx 0 STOP");
  test::eventually([&] { return receiver.counters().stops > 0; });
  receiver.stop();  // in case run() did not return by itself, so the test cannot hang
  thread.join();
  EXPECT_TRUE(receiver.stop_sent());
}

TEST(PynealReceiver, HandlerRejectionsAreForwardedAndAClosedRunSaysStop) {
  ReceiverFixture server;
  PynealLikeSender sender(server.endpoint());
  sender.handshake();
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2));
  server.handler().answer_with({ErrorCode::kInconsistentRun, "field 'dims': 7x5x3 differs from the run's 8x8x8"});
  sender.send_volume(pyneal_header(0, "int16"), data);
  auto reply = sender.recv_string();
  EXPECT_EQ(reply.value_or("(none)"),
            "NACK volIdx 0: inconsistent_run: field 'dims': 7x5x3 differs from the run's 8x8x8");
  server.handler().answer_with({ErrorCode::kRunClosed, "run run-02 ended with 10 volumes"});
  sender.send_volume(pyneal_header(10, "int16"), data);
  reply = sender.recv_string();
  EXPECT_TRUE(contains(reply, "NACK volIdx 10: run_closed")) << reply.value_or("(none)");
  EXPECT_TRUE(reply && reply->ends_with(" STOP")) << reply.value_or("(none)");
  EXPECT_EQ(server.receiver().counters().rejected, 2);
}

TEST(PynealReceiver, AThrowingHandlerIsAnsweredWithInternal) {
  PynealOptions options;
  options.address = "tcp://127.0.0.1:*";
  options.poll_ms = 10;
  PynealReceiver receiver(options, [](const VolumeHeader&, std::vector<std::byte>&&, int64_t) -> Reply {
    throw std::runtime_error("disk full");
  });
  std::thread thread([&receiver] { receiver.run(); });
  PynealLikeSender sender(receiver.endpoint());
  sender.send_volume(pyneal_header(5, "int16"), std::vector<std::byte>(7 * 5 * 3 * 2));
  const auto reply = sender.recv_string();
  receiver.stop();
  thread.join();
  EXPECT_EQ(reply.value_or("(none)"), "NACK volIdx 5: internal: volume handler failed: disk full");
}

TEST(PynealReceiver, MissingTrNeedsAnOverride) {
  json h = json::parse(pyneal_header(0, "int16"));
  h.erase("TR");  // older pyneal_scanner adapters send no TR
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2));
  {
    ReceiverFixture server;
    PynealLikeSender sender(server.endpoint());
    sender.send_volume(h.dump(), data);
    const auto reply = sender.recv_string();
    EXPECT_TRUE(contains(reply, "NACK volIdx 0: missing_field: field 'TR'")) << reply.value_or("(none)");
  }
  PynealOptions options;
  options.tr_override_s = 0.8;
  ReceiverFixture server(options);
  PynealLikeSender sender(server.endpoint());
  sender.send_volume(h.dump(), data);
  EXPECT_EQ(sender.recv_string().value_or("(none)"), "received volIdx 0");
  ASSERT_EQ(server.handler().received().size(), 1u);
  EXPECT_DOUBLE_EQ(server.handler().received()[0].header.tr_s, 0.8);
}

// Waits (within test::kPatience) until the receiver has seen `n` disconnects.
bool wait_for_disconnects(PynealReceiver& receiver, int64_t n) {
  return test::eventually([&] { return receiver.counters().disconnects >= n; });
}

TEST(PynealReceiver, ASenderThatReconnectsIsServedAgain) {
  ReceiverFixture server;
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2));
  {
    PynealLikeSender first(server.endpoint());
    first.handshake();
    first.send_volume(pyneal_header(0, "int16"), data);
    EXPECT_EQ(first.recv_string().value_or("(none)"), "received volIdx 0");
    first.send_string(pyneal_header(1, "int16"));  // a header sent alone, then the sender dies before the data
    EXPECT_FALSE(first.recv_string(50).has_value());
  }
  ASSERT_TRUE(wait_for_disconnects(server.receiver(), 1));
  // pyneal_scanner restarted: a new PAIR connects, handshakes and goes on where the scan is. A PAIR socket serves one
  // peer at a time, and a peer that connects while ZeroMQ is still detaching the old one is refused without a word:
  // its handshake is lost (1 run in 40 under load here). So this sender does what a careful client must: with no reply
  // within a few seconds it connects again with a fresh socket (pyneal_scanner itself would wait forever; noted in
  // docs/pyneal.md).
  std::optional<PynealLikeSender> second;
  std::optional<std::string> reply;
  for (int attempt = 0; attempt < 10 && !reply; ++attempt) {
    second.reset();
    second.emplace(server.endpoint());
    second->send_string("hello from pyneal_scanner");
    reply = second->recv_string(5000);
  }
  ASSERT_EQ(reply.value_or("(none)"), "hello from pyneal_scanner");
  second->send_volume(pyneal_header(1, "int16"), data);
  EXPECT_EQ(second->recv_string().value_or("(none)"), "received volIdx 1");
  EXPECT_EQ(server.handler().received().size(), 2u);
  const PynealCounters c = server.receiver().counters();
  EXPECT_GE(c.connections, 2);
  EXPECT_GE(c.handshakes, 2);
  EXPECT_EQ(c.rejected, 1);  // the orphaned header
}

TEST(PynealReceiver, ASecondConcurrentSenderIsNotHeard) {
  // PAIR serves one peer at a time; libzmq keeps a second connection open but never reads from it.
  ReceiverFixture server;
  const std::vector<std::byte> data(static_cast<size_t>(7 * 5 * 3 * 2));
  PynealLikeSender first(server.endpoint());
  first.handshake();
  PynealLikeSender second(server.endpoint());
  second.send_string("hello from pyneal_scanner");
  EXPECT_TRUE(test::eventually([&] { return server.receiver().counters().connections == 2; }));
  EXPECT_FALSE(second.recv_string(300).has_value());
  // The first one is still served.
  first.send_volume(pyneal_header(0, "int16"), data);
  EXPECT_EQ(first.recv_string().value_or("(none)"), "received volIdx 0");
  EXPECT_EQ(server.receiver().counters().handshakes, 1);
}

TEST(PynealReceiver, BindFailuresAndBadOptionsThrow) {
  RecordingHandler handler;
  PynealOptions bad;
  bad.address = "tcp://127.0.0.1:*";
  bad.session = "../x";
  EXPECT_THROW(PynealReceiver(bad, handler.handler()), std::invalid_argument);
  bad.session = "ok";
  bad.tr_override_s = 0.0;
  EXPECT_THROW(PynealReceiver(bad, handler.handler()), std::invalid_argument);
  bad.tr_override_s.reset();
  EXPECT_THROW(PynealReceiver(bad, VolumeHandler{}), std::invalid_argument);
  PynealOptions taken;
  taken.address = "tcp://127.0.0.1:*";
  PynealReceiver first(taken, handler.handler());
  taken.address = first.endpoint();
  EXPECT_THROW(PynealReceiver(taken, handler.handler()), std::runtime_error);
  taken.address = "not-an-endpoint";
  EXPECT_THROW(PynealReceiver(taken, handler.handler()), std::runtime_error);
}

}  // namespace
}  // namespace rtf::stream::pyneal
