// ctest-label: e2e
// `rtfmri scanner watch` end to end in one process (scanner/watch/scanner_watch.hpp): files written into an export
// folder while the watch runs, the real ingest server recording what it sends. pyneal's real Siemens mosaics and GE
// slices (scanner/ of the extra data, RTF_EXTRA_DATA_DIR), copied in pieces as a console writes them, beside a file
// that is not an image, are recorded as two runs whose volumes equal dcm2niix's (run by the test) voxel for voxel,
// affine within 1e-4 mm; the simulator's series (sim/dicom) come back as the NIfTI written, exactly, for each vendor
// layout, watched with inotify and by polling; Philips PAR/REC pairs, each half arriving separately, make the volumes
// par_rec_volume makes (dcm2niix's, test_par_rec_volume); a watch restarted over a folder it had half sent loses and
// repeats nothing; a series started again becomes a second run; a file of 8 GiB that is not DICOM costs the watch its
// first bytes, not its size (issue 35).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/par_rec_volume.hpp"
#include "scanner/dicom/dicom_writer.hpp"
#include "scanner/watch/scanner_watch.hpp"
#include "sim/dicom/dicom_series_sim.hpp"
#include "tests/support/address_space_limit.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/dcm2niix.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/ingest_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::scanner {
namespace {

namespace fs = std::filesystem;

// A watch on its own thread for the life of the object.
class RunningWatch {
 public:
  RunningWatch(ScannerWatchOptions options, zmq::context_t& context) : watch_(std::move(options), context) {
    thread_ = std::thread([this] { report_ = watch_.run(); });
  }
  ~RunningWatch() { finish(); }
  const ScannerWatchReport& finish() {
    if (thread_.joinable()) {
      watch_.stop();
      thread_.join();
    }
    return report_;
  }

 private:
  ScannerWatch watch_;
  ScannerWatchReport report_;
  std::thread thread_;
};

ScannerWatchOptions watch_options(const fs::path& folder, const std::string& address, int64_t volumes_per_run) {
  ScannerWatchOptions o;
  o.folder = folder;
  o.watch.recursive = true;
  o.watch.poll_interval_s = 0.02;
  o.sender.address = address;
  o.sender.resend_timeout_s = 30.0;  // a healthy server always answers; only a lost message needs a resend
  o.session = "scanner";
  o.volumes_per_run = volumes_per_run;
  o.finish_timeout_s = 120;
  return o;
}

// Copies `from` to `to` as a console writes: the first third, flushed, then the rest, then closed.
void write_in_pieces(const fs::path& from, const fs::path& to) {
  std::ifstream in(from, std::ios::binary);
  const std::vector<char> bytes(std::istreambuf_iterator<char>(in), {});
  fs::create_directories(to.parent_path());
  std::ofstream out(to, std::ios::binary);
  const auto third = static_cast<std::streamsize>(bytes.size() / 3);
  out.write(bytes.data(), third);
  out.flush();
  out.write(bytes.data() + third, static_cast<std::streamsize>(bytes.size()) - third);
}

// The NIfTI the server wrote for a closed run (written off its ingest thread: waited for here, once the watch that
// sent the run has finished, so no message is in flight).
Image recorded_run(test::IngestServer& server, const fs::path& server_dir, const std::string& run) {
  server.core().wait_for_run_files();
  return read_nifti(server_dir / "runs" / run / "bold.nii.gz");
}

TEST(ScannerWatch, SendsRealSiemensAndGeSeriesAsDcm2niixMakesThem) {
  const std::string ge_first = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
  const std::string siemens_first = "scanner/pyneal_Siemens/funcData/001_000013_000001.dcm";
  const auto ge = test::extra_data(ge_first);
  const auto siemens = test::extra_data(siemens_first);
  if (!ge || !siemens) GTEST_SKIP() << test::missing_extra_data(ge_first);
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir tmp;
  const Image ge_theirs = test::dcm2niix_of(ge->parent_path(), tmp.path() / "ge");
  const Image siemens_theirs = test::dcm2niix_of(siemens->parent_path(), tmp.path() / "siemens");
  const fs::path exported = tmp.path() / "export";
  fs::create_directories(exported);
  test::IngestServer server(tmp.path() / "server");
  zmq::context_t context(1);
  RunningWatch watch(watch_options(exported, server.endpoint(), 3), context);

  std::ofstream(exported / "README.txt") << "not an image\n";
  std::vector<fs::path> ge_files, siemens_files;
  for (const auto& e : fs::directory_iterator(ge->parent_path())) ge_files.push_back(e.path());
  for (const auto& e : fs::directory_iterator(siemens->parent_path())) siemens_files.push_back(e.path());
  std::mt19937 rng(test::test_seed());
  std::shuffle(ge_files.begin(), ge_files.end(), rng);
  for (size_t k = 0; k < ge_files.size(); ++k) {
    write_in_pieces(ge_files[k], exported / "s1925" / ge_files[k].filename());
    if (k % 18 == 0 && k / 18 < siemens_files.size()) {
      write_in_pieces(siemens_files[k / 18], exported / siemens_files[k / 18].filename());
    }
  }
  ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 2; }));
  const ScannerWatchReport report = watch.finish();
  EXPECT_EQ(report.volumes, 6);
  EXPECT_EQ(report.skipped, 1);  // README.txt
  EXPECT_TRUE(report.failures.empty());
  std::vector<std::string> closed = report.runs_closed;
  std::sort(closed.begin(), closed.end());
  EXPECT_EQ(closed, (std::vector<std::string>{"series-006", "series-013"}));

  const Image ge_mine = recorded_run(server, tmp.path() / "server", "series-006");
  const Image siemens_mine = recorded_run(server, tmp.path() / "server", "series-013");
  ASSERT_EQ(ge_mine.nt(), 3);
  ASSERT_EQ(siemens_mine.nt(), 3);
  for (int64_t t = 0; t < 3; ++t) {
    test::expect_same_volume(ge_mine.extract_volume(t), ge_theirs, t);
    test::expect_same_volume(siemens_mine.extract_volume(t), siemens_theirs, t);
  }
  EXPECT_NEAR(ge_mine.header().tr_s, 1.0, 1e-9);
}

// An 8 GiB file that is not DICOM (sparse: no disk), moved into the folder before pyneal's real mosaics arrive, under
// an address-space ceiling 2 GiB above what the process uses (reading it whole cannot fit): it is skipped as not
// DICOM, the reason naming it, and the three volumes still arrive as one closed run.
TEST(ScannerWatch, AHugeFileThatIsNotDicomIsSkippedAndTheVolumesStillArrive) {
  const std::string siemens_first = "scanner/pyneal_Siemens/funcData/001_000013_000001.dcm";
  const auto siemens = test::extra_data(siemens_first);
  if (!siemens) GTEST_SKIP() << test::missing_extra_data(siemens_first);
  const test::TempDir tmp;
  const fs::path exported = tmp.path() / "export";
  fs::create_directories(exported);
  const fs::path huge = tmp.path() / "console_dump.raw";
  std::ofstream(huge).put('x');
  fs::resize_file(huge, uint64_t{8} << 30);
  std::vector<fs::path> mosaics;
  for (const auto& e : fs::directory_iterator(siemens->parent_path())) mosaics.push_back(e.path());
  std::sort(mosaics.begin(), mosaics.end());
  test::IngestServer server(tmp.path() / "server");
  zmq::context_t context(1);
  const test::AddressSpaceLimit ceiling(uint64_t{2} << 30);
  RunningWatch watch(watch_options(exported, server.endpoint(), 3), context);
  fs::rename(huge, exported / huge.filename());  // complete when it appears
  for (const fs::path& mosaic : mosaics) write_in_pieces(mosaic, exported / mosaic.filename());
  ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 1; }));
  const ScannerWatchReport report = watch.finish();
  EXPECT_EQ(report.volumes, 3);
  EXPECT_EQ(report.runs_closed, std::vector<std::string>{"series-013"});
  ASSERT_EQ(report.skip_reasons.size(), 1u);
  EXPECT_NE(report.skip_reasons[0].find("console_dump.raw: not a DICOM file"), std::string::npos)
      << report.skip_reasons[0];
}

TEST(ScannerWatch, SendsPhilipsParRecPairsAsTheyArrive) {
  const std::string first = "scanner/pyneal_Philips/funcData/0001/Dump-0000.par";
  const auto par = test::extra_data(first);
  if (!par) GTEST_SKIP() << test::missing_extra_data(first);
  const test::TempDir tmp;
  const fs::path exported = tmp.path() / "export";
  fs::create_directories(exported);
  test::IngestServer server(tmp.path() / "server");
  zmq::context_t context(1);
  ScannerWatchOptions options = watch_options(exported, server.endpoint(), 4);
  options.tr_s = 2.0;  // the XTC dumps say 1 ms
  RunningWatch watch(options, context);
  // Each pair as XTC writes it: the REC first, then its PAR (in pieces), so the volume waits for its second half.
  for (int k = 0; k < 4; ++k) {
    const fs::path stem = par->parent_path() / fmt::format("Dump-{:04d}", k);
    write_in_pieces(fs::path(stem).replace_extension(".rec"), exported / "0001" / fmt::format("Dump-{:04d}.rec", k));
    write_in_pieces(fs::path(stem).replace_extension(".par"), exported / "0001" / fmt::format("Dump-{:04d}.par", k));
  }
  ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 1; }));
  const ScannerWatchReport report = watch.finish();
  EXPECT_EQ(report.volumes, 4);
  EXPECT_EQ(report.skipped, 0);
  const Image mine = recorded_run(server, tmp.path() / "server", "series-001");
  ASSERT_EQ(mine.nt(), 4);
  EXPECT_NEAR(mine.header().tr_s, 2.0, 1e-9);
  // Each volume as par_rec_volume makes it from the original pair (tests/scanner/test_par_rec_volume.cpp: dcm2niix's).
  for (int k = 0; k < 4; ++k) {
    const dicom::DicomVolume want = dicom::par_rec_volume(par->parent_path() / fmt::format("Dump-{:04d}.par", k));
    const Image got = mine.extract_volume(k);
    ASSERT_EQ(got.header().dims, want.image.header().dims);
    EXPECT_EQ(got.data(), want.image.data()) << "volume " << k;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 4; ++c) EXPECT_NEAR(got.header().affine(r, c), want.image.header().affine(r, c), 1e-4);
    }
  }
}

// A random integer series on an odd oblique grid whose slice axis points along the rows x columns normal (negative
// determinant, as dcm2niix writes DICOM data), so that every layout gives its slices back in the same order.
Image random_series(uint32_t seed, int64_t volumes) {
  ImageHeader h;
  h.dims = {37, 29, 11};
  h.num_volumes = volumes;
  const Eigen::Matrix3d r = Eigen::AngleAxisd(0.2, Eigen::Vector3d(0.3, 1.0, -0.4).normalized()).toRotationMatrix();
  h.affine = Eigen::Matrix4d::Identity();
  h.affine.topLeftCorner<3, 3>() = r * Eigen::Vector3d(-2.5, 2.5, 3.5).asDiagonal();
  h.affine.topRightCorner<3, 1>() = Eigen::Vector3d(46.0, -38.0, -12.0);
  h.voxel_mm = {2.5, 2.5, 3.5};
  h.tr_s = 1.5;
  h.source_type = DataType::kInt16;
  Image image(h);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 3000);
  for (float& v : image.data()) v = static_cast<float>(d(rng));
  return image;
}

void expect_same_series(const Image& mine, const Image& written) {
  ASSERT_EQ(mine.header().dims, written.header().dims);
  ASSERT_EQ(mine.nt(), written.nt());
  EXPECT_EQ(mine.data(), written.data());
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(mine.header().affine(r, c), written.header().affine(r, c), 1e-4);
  }
  EXPECT_NEAR(mine.header().tr_s, written.header().tr_s, 1e-6);
}

// Each vendor layout, watched with inotify and by polling (a network mount): polling may meet a file still being
// written, which the whole-file check sends back to the watcher until it is complete.
TEST(ScannerWatch, SimulatedSeriesRoundTripExactlyForEachVendor) {
  const uint32_t seed = test::test_seed();
  for (const auto mode : {WatchMode::kInotify, WatchMode::kPoll}) {
    for (const auto vendor : {sim::DicomVendor::kSiemensMosaic, sim::DicomVendor::kGe, sim::DicomVendor::kEnhanced}) {
      SCOPED_TRACE(std::string(sim::to_string(vendor)) + (mode == WatchMode::kPoll ? ", polling" : ", inotify"));
      const test::TempDir tmp;
      const Image image = random_series(seed, 4);
      const fs::path exported = tmp.path() / "export";
      fs::create_directories(exported);
      test::IngestServer server(tmp.path() / "server");
      zmq::context_t context(1);
      ScannerWatchOptions options = watch_options(exported, server.endpoint(), image.nt());
      options.watch.mode = mode;
      options.watch.settle_s = 0.1;
      RunningWatch watch(options, context);
      sim::DicomSimOptions sim;
      sim.out = exported;
      sim.vendor = vendor;
      sim.speed = 0;
      sim.series_number = 7;
      sim::simulate_dicom_series(image, sim);
      ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 1; }));
      const ScannerWatchReport report = watch.finish();
      EXPECT_EQ(report.volumes, image.nt());
      EXPECT_EQ(report.skipped, 0);
      expect_same_series(recorded_run(server, tmp.path() / "server", "series-007"), image);
    }
  }
}

TEST(ScannerWatch, ARestartedWatchLosesAndRepeatsNothing) {
  const test::TempDir tmp;
  const Image image = random_series(test::test_seed(), 6);
  const fs::path exported = tmp.path() / "export";
  fs::create_directories(exported);
  test::IngestServer server(tmp.path() / "server");
  zmq::context_t context(1);
  sim::DicomSimOptions sim;
  sim.out = exported;
  sim.speed = 0;
  sim.series_number = 3;
  sim.count = 4;
  const sim::DicomSimReport first = sim::simulate_dicom_series(image, sim);
  {
    ScannerWatchOptions o = watch_options(exported, server.endpoint(), 0);
    o.stop_after = 2;  // stops after two ACKs, with the rest of the folder perhaps half sent
    ScannerWatch watch(o, context);
    watch.run();
  }
  // The second watch finds the folder as it is, then the console writes the last two volumes.
  RunningWatch watch(watch_options(exported, server.endpoint(), 6), context);
  dicom::DicomWriteSeries series;
  series.series_instance_uid = first.series_instance_uid;
  series.series_number = 3;
  series.tr_s = image.header().tr_s;
  for (int64_t t = 4; t < 6; ++t) {
    const fs::path name = sim::dicom_file_names(sim::DicomVendor::kSiemensMosaic, 3, t, image.nz()).front();
    dicom::write_mosaic_volume(image.extract_volume(t), series, t, exported / name);
  }
  ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 1; }));
  watch.finish();
  EXPECT_EQ(server.core().stats().recorded, 6);
  expect_same_series(recorded_run(server, tmp.path() / "server", "series-003"), image);
}

TEST(ScannerWatch, ASeriesStartedAgainIsASecondRun) {
  const test::TempDir tmp;
  const Image image = random_series(test::test_seed(), 3);
  const fs::path exported = tmp.path() / "export";
  fs::create_directories(exported);
  test::IngestServer server(tmp.path() / "server");
  zmq::context_t context(1);
  RunningWatch watch(watch_options(exported, server.endpoint(), 3), context);
  sim::DicomSimOptions sim;
  sim.vendor = sim::DicomVendor::kGe;
  sim.speed = 0;
  sim.series_number = 9;
  sim.out = exported / "first";
  sim::simulate_dicom_series(image, sim);
  sim.out = exported / "again";  // the operator ran the series again: a new SeriesInstanceUID, the same number
  sim::simulate_dicom_series(image, sim);
  ASSERT_TRUE(test::eventually([&] { return server.core().stats().runs_closed >= 2; }));
  const ScannerWatchReport report = watch.finish();
  std::vector<std::string> closed = report.runs_closed;  // in the order their last volumes completed
  std::sort(closed.begin(), closed.end());
  EXPECT_EQ(closed, (std::vector<std::string>{"series-009", "series-009-2"}));
  expect_same_series(recorded_run(server, tmp.path() / "server", "series-009"), image);
  expect_same_series(recorded_run(server, tmp.path() / "server", "series-009-2"), image);
}

}  // namespace
}  // namespace rtf::scanner
