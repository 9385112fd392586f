// ctest-label: unit
// pyneal end to end into the real ingest path (what `rtfmri run --pyneal` wires up): a pyneal_scanner-like PAIR
// sender streams C-ordered int16 volumes (shape [x, y, z], z fastest) into PynealReceiver -> IngestCore; the last
// reply says STOP; the closed run's bold.nii.gz holds voxel (i, j, k) = array[i][j][k] for every volume.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <variant>

#include "core/io/nifti_io.hpp"
#include "stream/pyneal/pyneal_receiver.hpp"
#include "stream/server/ingest_core.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream {
namespace {

TEST(PynealIngest, VolumesAreRecordedInRtfmriLayoutAndTheRunCloses) {
  test::TempDir tmp;
  IngestCore core(tmp.path());
  constexpr int64_t kVolumes = 6;
  constexpr std::array<int64_t, 3> kShape{9, 7, 5};
  pyneal::PynealOptions options;
  options.address = "tcp://127.0.0.1:*";
  options.session = "pyneal";
  options.run = "run-01";
  options.stop_after = kVolumes;
  options.return_after_stop = true;
  pyneal::PynealReceiver receiver(options, core.as_handler());
  std::thread receiver_thread([&] { receiver.run(); });

  zmq::context_t context(1);
  zmq::socket_t sender(context, zmq::socket_type::pair);
  sender.set(zmq::sockopt::linger, 0);
  sender.set(zmq::sockopt::rcvtimeo, 60000);  // a bound that only turns a hang into a failure
  sender.connect(receiver.endpoint());
  const std::string hello = "hello from pyneal_scanner ";
  sender.send(zmq::buffer(hello));
  zmq::message_t reply;
  ASSERT_TRUE(sender.recv(reply));
  EXPECT_EQ(reply.to_string(), hello);

  std::mt19937 rng(5);
  std::uniform_int_distribution<int> d(-2000, 2000);
  std::vector<std::vector<int16_t>> sent;
  const std::string affine =
      "[[2.0, 0.0, 0.0, -9.0], [0.0, 2.5, 0.0, -8.0], [0.0, 0.0, 3.0, -7.0], [0.0, 0.0, 0.0, 1.0]]";
  for (int64_t idx = 0; idx < kVolumes; ++idx) {
    std::vector<int16_t> c_order(static_cast<size_t>(kShape[0] * kShape[1] * kShape[2]));
    for (auto& v : c_order) v = static_cast<int16_t>(d(rng));
    sent.push_back(c_order);
    const nlohmann::json header = {
        {"volIdx", idx}, {"dtype", "int16"}, {"shape", kShape}, {"affine", affine}, {"TR", "2.0"}};
    sender.send(zmq::buffer(header.dump()), zmq::send_flags::sndmore);
    sender.send(zmq::buffer(c_order.data(), c_order.size() * 2));
    ASSERT_TRUE(sender.recv(reply)) << "no reply to volume " << idx;
    EXPECT_NE(reply.to_string().find("received volIdx " + std::to_string(idx)), std::string::npos) << reply.to_string();
    EXPECT_EQ(reply.to_string().find("STOP") != std::string::npos, idx == kVolumes - 1) << reply.to_string();
  }
  receiver_thread.join();  // returns after STOP
  const Reply closed = core.handle_end_of_run(EndOfRun{1, "pyneal", "run-01", kVolumes});
  ASSERT_TRUE(std::holds_alternative<Ack>(closed)) << std::get<Nack>(closed).reason;
  core.wait_for_run_files();

  const Image bold = read_nifti(tmp.path() / "runs" / "run-01" / "bold.nii.gz");
  ASSERT_EQ(bold.nt(), kVolumes);
  EXPECT_EQ(bold.header().dims, kShape);
  EXPECT_NEAR(bold.header().voxel_mm[1], 2.5, 1e-6);
  EXPECT_NEAR(bold.header().affine(2, 3), -7.0, 1e-6);
  EXPECT_NEAR(bold.header().tr_s, 2.0, 1e-6);
  for (int64_t t = 0; t < kVolumes; ++t) {
    for (int64_t i = 0; i < kShape[0]; ++i) {
      for (int64_t j = 0; j < kShape[1]; ++j) {
        for (int64_t k = 0; k < kShape[2]; ++k) {
          const int16_t expected =
              sent[static_cast<size_t>(t)][static_cast<size_t>((i * kShape[1] + j) * kShape[2] + k)];
          ASSERT_EQ(bold.at(i, j, k, t), static_cast<float>(expected)) << t << ":" << i << "," << j << "," << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace rtf::stream
