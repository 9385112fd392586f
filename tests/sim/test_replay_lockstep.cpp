// ctest-label: unit
// Lockstep replay: FeedbackLockstep reads the server's feedback lines (per run, the newest volume seen; other lines
// ignored; a closed server is an error, an address that cannot work too), and replay()'s `handled` gate holds each
// volume back until the previous one was handled, or fails with a clear error when the server never finishes one.
#include <gtest/gtest.h>

#include <thread>

#include "sim/replay/feedback_lockstep.hpp"
#include "sim/replay/replay.hpp"
#include "stream/output/tcp_feedback_server.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/zmq_ingest_server.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::sim {
namespace {

TEST(FeedbackLockstep, FollowsTheNewestVolumeOfEachRun) {
  stream::TcpFeedbackServer server({"127.0.0.1", 0, 64});
  FeedbackLockstep lockstep("127.0.0.1:" + std::to_string(server.port()), 60.0);
  ASSERT_TRUE(test::eventually([&] { return server.counters().clients == 1; }));
  EXPECT_FALSE(lockstep.finished("run-01", 0));
  server.publish(R"({"run": "run-01", "volume": 0, "feedback": 0.5})");
  EXPECT_TRUE(test::eventually([&] { return lockstep.finished("run-01", 0); }));
  EXPECT_FALSE(lockstep.finished("run-01", 1));
  EXPECT_FALSE(lockstep.finished("run-02", 0));
  server.publish("not json");
  server.publish(R"({"run": "run-02", "volume": "seven"})");
  server.publish(R"({"run": "run-02", "volume": 5})");
  EXPECT_TRUE(test::eventually([&] { return lockstep.finished("run-02", 5); }));
  EXPECT_TRUE(lockstep.finished("run-02", 3));  // a later volume: the earlier ones are done (or were skipped)
  EXPECT_FALSE(lockstep.finished("run-01", 1));
  EXPECT_EQ(lockstep.lines(), 4);
  server.stop();
  bool closed = false;
  test::eventually([&] {
    try {
      lockstep.finished("run-01", 9);
    } catch (const std::runtime_error& e) {
      closed = std::string(e.what()).find("closed") != std::string::npos;
    }
    return closed;
  });
  EXPECT_TRUE(closed) << "a server that went away must be an error, not a wait";
}

TEST(FeedbackLockstep, AddressesThatCannotWork) {
  EXPECT_THROW(FeedbackLockstep("no-port", 1.0), std::invalid_argument);
  EXPECT_THROW(FeedbackLockstep("127.0.0.1:", 1.0), std::invalid_argument);
  EXPECT_THROW(FeedbackLockstep("no.such.host.invalid:5557", 1.0), std::invalid_argument);
  // Nothing listens on a port that was just closed: refused until the (short) timeout, then an error.
  uint16_t port = 0;
  {
    stream::TcpFeedbackServer gone({"127.0.0.1", 0, 4});
    port = gone.port();
  }
  try {
    FeedbackLockstep("127.0.0.1:" + std::to_string(port), 0.3);
    ADD_FAILURE() << "connected to a closed port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no feedback server"), std::string::npos) << e.what();
  }
}

Image small_run(int64_t volumes) {
  ImageHeader h;
  h.dims = {6, 5, 4};
  h.num_volumes = volumes;
  h.tr_s = 1.0;
  h.source_type = DataType::kInt16;
  Image image(h);
  for (size_t i = 0; i < image.data().size(); ++i) image.data()[i] = static_cast<float>(i % 1000);
  return image;
}

// An ingest server (no device stage) on its own thread for the life of the object.
class IngestServer {
 public:
  IngestServer() : core_(tmp_.path()), server_(context_, core_, options()) {
    thread_ = std::thread([this] { server_.run(); });
  }
  ~IngestServer() { stop(); }
  IngestServer(const IngestServer&) = delete;
  IngestServer& operator=(const IngestServer&) = delete;
  void stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  // Replay options aimed at this server: as fast as it acknowledges, never a resend (nothing is lost on loopback).
  ReplayOptions replay_options() const {
    ReplayOptions o;
    o.address = server_.endpoint();
    o.speed = 0;
    o.resend_timeout_s = 600;
    return o;
  }
  int64_t recorded() { return core_.stats().recorded; }

 private:
  static stream::ZmqServerOptions options() {
    stream::ZmqServerOptions o;
    o.address = "tcp://127.0.0.1:*";
    return o;
  }
  test::TempDir tmp_;
  stream::IngestCore core_;
  zmq::context_t context_{1};
  stream::ZmqIngestServer server_;
  std::thread thread_;
};

TEST(ReplayLockstep, EachVolumeWaitsUntilThePreviousOneWasHandled) {
  IngestServer server;
  ReplayOptions options = server.replay_options();
  std::vector<int64_t> asked;
  bool ran_ahead = false;
  options.handled = [&](int64_t previous) {
    if (asked.empty() || asked.back() != previous) asked.push_back(previous);
    // The next volume has not been sent while we are asked: the server holds at most previous + 1 volumes.
    ran_ahead |= server.recorded() > previous + 1;
    return server.recorded() > previous;  // "handled": recorded, here
  };
  zmq::context_t context(1);
  const ReplayReport report = replay(small_run(6), options, context);
  server.stop();
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(server.recorded(), 6);
  EXPECT_EQ(asked, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(ran_ahead);
}

TEST(ReplayLockstep, AServerThatNeverFinishesIsAnError) {
  IngestServer server;
  ReplayOptions options = server.replay_options();
  options.lockstep_timeout_s = 0.3;
  options.handled = [](int64_t) { return false; };
  zmq::context_t context(1);
  try {
    replay(small_run(3), options, context);
    ADD_FAILURE() << "the replay did not give up";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish volume 0"), std::string::npos) << e.what();
  }
  server.stop();
  EXPECT_LE(server.recorded(), 1);  // only the first volume went out
}

}  // namespace
}  // namespace rtf::sim
