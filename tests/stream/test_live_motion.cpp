// ctest-label: gpu
// ctest-properties: PROCESSORS 2  (a server with the motion stage on PoCL)
// The live motion stage through the real ingest path: phantom volumes with known motion (+-3 mm, +-3 degrees,
// tSNR 80) are replayed over ZeroMQ to the server, recorded, uploaded to the device ring, registered to volume 0,
// resliced into the ring and logged in runs/<run>/motion.tsv. Every volume gets a row, none is flagged, the
// parameters match the truth (RMS < 0.05 mm / 0.05 degrees), and the ring holds the corrected volume: closer to the
// reference than the raw one.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "sim/phantom/phantom.hpp"
#include "sim/replay/replay.hpp"
#include "stream/pipeline/live_stage.hpp"
#include "stream/server/ingest_core.hpp"
#include "stream/server/latency_log.hpp"
#include "stream/server/zmq_ingest_server.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// RMS difference over the interior of a 64x64x33 grid: 5 voxels from every face, so that content moved across the
// field of view's edge (zeros after reslicing) does not count.
double rms_difference(std::span<const float> a, std::span<const float> b) {
  double s = 0.0;
  int64_t n = 0;
  for (int64_t z = 5; z < 33 - 5; ++z) {
    for (int64_t y = 5; y < 64 - 5; ++y) {
      for (int64_t x = 5; x < 64 - 5; ++x) {
        const auto i = static_cast<size_t>((z * 64 + y) * 64 + x);
        s += std::pow(double(a[i]) - double(b[i]), 2);
        ++n;
      }
    }
  }
  return std::sqrt(s / static_cast<double>(n));
}

TEST(LiveMotion, ReplayedPhantomIsCorrectedPerVolume) {
  const auto template_path = test::installed_data("mricron/ch2bet.nii.gz");
  if (!template_path) GTEST_SKIP() << test::missing_installed_data("mricron/ch2bet.nii.gz");
  sim::PhantomSpec spec;
  spec.template_path = *template_path;
  spec.volumes = 10;
  spec.seed = 31;
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  spec.motion_override.push_back({});
  for (int64_t t = 1; t < spec.volumes; ++t)
    spec.motion_override.push_back({{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}});
  sim::PhantomResult ph = sim::make_phantom(spec);
  // The scanner sends integers: round to int16 like the phantom's default output.
  for (float& v : ph.bold.data()) v = std::round(v);
  ph.bold.header().source_type = DataType::kInt16;

  test::TempDir tmp;
  stream::IngestCore core(tmp.path());
  stream::LatencyLog latency(tmp.path() / "latency.jsonl");
  zmq::context_t context(1);
  stream::ZmqServerOptions server_options;
  server_options.address = "tcp://127.0.0.1:*";
  stream::ZmqIngestServer server(context, core, server_options);
  stream::PipelineConfig config = stream::upload_only_config(tmp.path(), 16);
  config.motion = true;
  std::map<int64_t, std::vector<float>> corrected;  // the motion-corrected volume of each analysed TR
  stream::LiveStage upload(test::test_device(), config, core.queue(), latency, tmp.path(), nullptr,
                           [&](const stream::TrResult& r) { corrected[r.index] = r.volume; });
  std::thread upload_thread([&] { upload.run(); });
  std::thread server_thread([&] { server.run(); });
  sim::ReplayOptions options;
  options.address = server.endpoint();
  options.speed = 0;
  options.finish_timeout_s = 300;
  options.resend_timeout_s = 600;  // nothing is lost on loopback: a resend would only count a slow disk as a duplicate
  // Lockstep: each volume once the stage has finished the previous one, so every volume is analysed on any machine.
  options.handled = [&](int64_t previous) {
    const stream::LiveStageCounters c = upload.counters();
    return c.analysed + c.skipped + c.failed > previous;
  };
  const sim::ReplayReport report = sim::replay(ph.bold, options, context);
  server.stop();
  server_thread.join();
  core.queue().close();
  upload_thread.join();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(upload.counters().failed, 0);

  std::ifstream in(tmp.path() / "runs" / "run-01" / "motion.tsv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.substr(0, 13), "volume\tfd_mm\t");
  std::array<double, 6> sq{};
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    int64_t volume;
    double fd, dv;
    std::array<double, 6> p{};
    row >> volume >> fd >> dv >> p[0] >> p[1] >> p[2] >> p[3] >> p[4] >> p[5];
    const RigidParams& truth = ph.motion[static_cast<size_t>(volume)];
    for (size_t a = 0; a < 3; ++a) {
      sq[a] += std::pow(p[a] - truth.translation_mm[a], 2);
      sq[3 + a] += std::pow(p[3 + a] - truth.rotation_deg[a], 2);
    }
    ++rows;
  }
  EXPECT_EQ(upload.counters().analysed, spec.volumes);
  EXPECT_EQ(rows, spec.volumes);
  for (size_t a = 0; a < 6; ++a) EXPECT_LT(std::sqrt(sq[a] / rows), 0.05) << "parameter " << a;

  // The stage's corrected volumes (what the ring holds after motion correction): inside the field of view, much closer
  // to volume 0 than the raw ones.
  ASSERT_EQ(static_cast<int64_t>(corrected.size()), spec.volumes);
  const auto& reference = corrected.at(0);
  int compared = 0;
  for (int64_t t = 1; t < spec.volumes; ++t) {
    const double after = rms_difference(corrected.at(t), reference);
    const double raw = rms_difference(ph.bold.volume(t), reference);
    std::printf("volume %lld: RMS difference to volume 0, interior: corrected %.0f, raw %.0f\n",
                static_cast<long long>(t), after, raw);
    EXPECT_LT(after, 0.5 * raw) << "volume " << t;
    ++compared;
  }
  EXPECT_EQ(compared, spec.volumes - 1);
}

}  // namespace
}  // namespace rtf
