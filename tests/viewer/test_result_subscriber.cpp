// The viewer's network thread against the server's real publisher (stream/output/result_publisher): messages arrive
// and are decoded on the subscriber's own thread; when the server stops and a new one binds the same address, the
// subscriber reconnects by itself and the viewer starts over (history cleared, restart counted), and its connection
// status follows (connected, lost, connected again); an unreadable
// message is counted and skipped.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "stream/output/result_publisher.hpp"
#include "tests/support/eventually.hpp"
#include "viewer/result_subscriber.hpp"

namespace rtf::viewer {
namespace {

nlohmann::json header(int64_t volume) {
  return {{"run", "run-01"}, {"volume", volume}, {"feedback", 0.5}, {"device", "test"}};
}

// Publishes `volume`, `volume + 1`, ... until the shared data shows `expected` TRs (PUB drops what a not-yet-connected
// SUB misses), at most for test::kPatience.
bool publish_until(stream::ResultPublisher& pub, SharedViewerData& shared, int64_t from, size_t expected) {
  ViewerData view;
  int64_t volume = from;
  return test::eventually([&] {
    pub.publish(header(volume++), {});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    shared.refresh(view);
    return view.history.size() >= expected;
  });
}

int free_port() {
  zmq::context_t c(1);
  zmq::socket_t s(c, zmq::socket_type::pub);
  s.bind("tcp://127.0.0.1:*");
  const std::string e = s.get(zmq::sockopt::last_endpoint);
  return std::stoi(e.substr(e.rfind(':') + 1));
}

TEST(ResultSubscriber, ReceivesAndReconnectsWhenTheServerRestarts) {
  const std::string address = "tcp://127.0.0.1:" + std::to_string(free_port());
  SharedViewerData shared;
  ResultSubscriber subscriber(address, shared);
  {
    zmq::context_t context(1);
    stream::ResultPublisher pub(context, {address, 16});
    ASSERT_TRUE(publish_until(pub, shared, 0, 5));
    EXPECT_TRUE(subscriber.status().connected);  // messages arrived: the handshake happened before them
  }                                              // the server goes away
  EXPECT_TRUE(test::eventually([&] { return !subscriber.status().connected; })) << "the lost server was not noticed";
  ViewerData before;
  shared.refresh(before);
  EXPECT_GE(before.history.size(), 5u);
  EXPECT_EQ(before.device, "test");
  {
    zmq::context_t context(1);
    stream::ResultPublisher pub(context, {address, 16});  // a new server: its sequence starts at 0 again
    // Until the first message of the new server arrives, nothing changes; afterwards the history restarted.
    ViewerData after;
    int64_t published = 0;
    const bool restarted = test::eventually([&] {
      pub.publish(header(100 + published++), {});
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      shared.refresh(after);
      return after.restarts >= 1;
    });
    ASSERT_TRUE(restarted) << "the subscriber did not reconnect to the restarted server";
    EXPECT_TRUE(subscriber.status().connected);
    EXPECT_LE(static_cast<int64_t>(after.history.size()), published);  // the old server's TRs are gone
    EXPECT_GE(after.history.front().volume, 100);                      // only the new server's TRs
  }
  EXPECT_EQ(subscriber.status().bad_messages, 0);
}

TEST(ResultSubscriber, UnreadableMessagesAreCountedAndSkipped) {
  const std::string address = "tcp://127.0.0.1:" + std::to_string(free_port());
  SharedViewerData shared;
  ResultSubscriber subscriber(address, shared);
  zmq::context_t context(1);
  stream::ResultPublisher pub(context, {address, 16});
  ASSERT_TRUE(publish_until(pub, shared, 0, 1));
  const std::vector<float> four{1, 2, 3, 4};
  // A frame whose size disagrees with its declared shape.
  pub.publish({{"volume", 9}, {"dims", {2, 2, 2}}},
              {{"volume", "float32", {2, 2, 2}, std::as_bytes(std::span<const float>(four))}});
  test::eventually([&] { return subscriber.status().bad_messages > 0; });
  EXPECT_EQ(subscriber.status().bad_messages, 1);
  EXPECT_NE(subscriber.status().last_error.find("volume"), std::string::npos);
  ASSERT_TRUE(publish_until(pub, shared, 10, 3));  // and it goes on
}

}  // namespace
}  // namespace rtf::viewer
