// ctest-label: unit
// AFNI real-time transport over loopback TCP, with a source written here that speaks the protocol as Dimon and
// rtfeedme do (control connection to the receiver's port, "tcp:localhost:PORT\0", close; data connection to PORT;
// header ending in '\0'; raw images; an image-sized end marker block; a new header on the same connection after it,
// as rtfeedme -break does). Checks: volumes arrive intact, in order, with the header's geometry; slices sent in
// alternating order and big-endian floats are reassembled; several runs (new header after the marker, new control
// connection) get run-01, run-02, ... and are closed with their volume counts; a source that disconnects mid-volume
// keeps what was complete; garbage on the control channel, a foreign data connection, a bad header and a refused
// volume are turned away without stopping the receiver, and so are sources that go silent during the handshake;
// NUM_CHAN deals volumes to per-channel runs; stop() works from another thread and before run(); real BOLD series
// (nitime's oblique fmri1, nipy's functional; skipped when not installed) sent with the header Dimon/rtfeedme would
// write reach a real IngestCore and are recorded with their voxels and affine. Waits are on conditions
// (tests/support/eventually.hpp), never on time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/io/nifti_io.hpp"
#include "stream/afni/afni_rt_header.hpp"
#include "stream/afni/afni_rt_receiver.hpp"
#include "stream/output/asio.hpp"
#include "stream/protocol/checksum.hpp"
#include "stream/server/ingest_core.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::stream::afni {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Bytes = std::vector<std::byte>;
using test::eventually;

// Records what the receiver hands over; refuses volume `refuse_index` when set.
class Recorder {
 public:
  VolumeHandler handler() {
    return [this](const VolumeHeader& h, std::vector<std::byte>&& payload, int64_t) -> Reply {
      std::lock_guard lock(mutex_);
      if (refuse_index_ && h.index == *refuse_index_) {
        return Nack{ReplyTo::kVolume, h.session, h.run, h.index, ErrorCode::kInternal, "disk full (test)"};
      }
      volumes_.push_back({h, std::move(payload)});
      return Ack{ReplyTo::kVolume, h.session, h.run, h.index, false};
    };
  }
  EndOfRunHandler end_handler() {
    return [this](const EndOfRun& e) -> Reply {
      std::lock_guard lock(mutex_);
      ends_.push_back(e);
      return Ack{ReplyTo::kEndOfRun, e.session, e.run, std::nullopt, false};
    };
  }
  void refuse(int64_t index) {
    std::lock_guard lock(mutex_);
    refuse_index_ = index;
  }
  struct Volume {
    VolumeHeader header;
    Bytes payload;
  };
  std::vector<Volume> volumes() {
    std::lock_guard lock(mutex_);
    return volumes_;
  }
  std::vector<EndOfRun> ends() {
    std::lock_guard lock(mutex_);
    return ends_;
  }

 private:
  std::mutex mutex_;
  std::vector<Volume> volumes_;
  std::vector<EndOfRun> ends_;
  std::optional<int64_t> refuse_index_;
};

// A receiver on a free loopback control port, running on its own thread for the life of the object.
class Fixture {
 public:
  explicit Fixture(AfniRtOptions o = options()) : receiver_(o, recorder.handler(), recorder.end_handler()) {
    thread_ = std::thread([this] { receiver_.run(); });
  }
  ~Fixture() {
    receiver_.stop();
    thread_.join();
  }
  static AfniRtOptions options() {
    AfniRtOptions o;
    o.address = "127.0.0.1";
    o.control_port = 0;
    o.session = "afnitest";
    return o;
  }
  AfniRtReceiver& receiver() { return receiver_; }
  AfniRtCounters counters() { return receiver_.counters(); }
  Recorder recorder;

 private:
  AfniRtReceiver receiver_;
  std::thread thread_;
};

uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

tcp::endpoint loopback(uint16_t port, const char* ip = "127.0.0.1") {
  return {asio::ip::make_address(ip), port};
}

// The image source's side, as Dimon's ART_start_io and rtfeedme's AFNI_start_io do it.
class Source {
 public:
  explicit Source(uint16_t control_port) : control_port_(control_port) {}

  // Sends the control string (with its '\0') and closes the control connection, as the sources do.
  void send_control(const std::string& text_with_nul) {
    tcp::socket c(io_);
    c.connect(loopback(control_port_));
    asio::write(c, asio::buffer(text_with_nul));
    c.close();
  }
  // Control handshake, then the data connection (retried until the receiver listens, as Dimon retries).
  void open(const char* from = "127.0.0.1") {
    data_port_ = free_port();
    send_control("tcp:localhost:" + std::to_string(data_port_) + std::string(1, '\0'));
    connect_data(from);
  }
  void connect_data(const char* from = "127.0.0.1") {
    ASSERT_TRUE(eventually([&] {
      boost::system::error_code ec;
      data_ = tcp::socket(io_);
      data_.open(tcp::v4(), ec);
      if (!ec) data_.bind(loopback(0, from), ec);
      if (!ec) data_.connect(loopback(data_port_), ec);
      return !ec;
    }));
  }
  void header(const std::string& text) { send(text + std::string(1, '\0')); }
  void send(const std::string& bytes) { asio::write(data_, asio::buffer(bytes)); }
  void send(const Bytes& bytes) { asio::write(data_, asio::buffer(bytes)); }
  void end_marker(size_t image_bytes) {
    std::string block(image_bytes, '\0');
    std::memcpy(block.data(), kEndMarker.data(), kEndMarker.size());
    send(block);
  }
  // True once the receiver has closed the data connection (a read gives EOF or an error).
  bool closed_by_peer() {
    char c = 0;
    boost::system::error_code ec;
    data_.read_some(asio::buffer(&c, 1), ec);
    return static_cast<bool>(ec);
  }
  void close() {
    boost::system::error_code ec;
    data_.shutdown(tcp::socket::shutdown_both, ec);
    data_.close(ec);
  }

 private:
  asio::io_context io_;
  uint16_t control_port_;
  uint16_t data_port_ = 0;
  tcp::socket data_{io_};
};

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng() & 0xff);
  return b;
}

std::string as_string(const Bytes& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

const std::string k3DT =
    "ACQUISITION_TYPE 3D+t\nTR 1.5\nXYMATRIX 7 5 3\nXYFOV 14 10\nZDELTA 2.5\nXYZAXES R-L A-P I-S\n"
    "XYZFIRST 7R 5A 10I\nDATUM short\nBYTEORDER LSB_FIRST\nDRIVE_AFNI OPEN_WINDOW axialimage\n";
constexpr size_t k3DTBytes = 7 * 5 * 3 * 2;

TEST(AfniRtReceiver, VolumesArriveIntactAndInOrder) {
  Fixture f;
  Source s(f.receiver().control_port());
  s.open();
  std::vector<Bytes> sent;
  for (uint32_t v = 0; v < 3; ++v) sent.push_back(random_bytes(k3DTBytes, 100 + v));
  // The header and the first volume in one write (the receiver must split them at the '\0'), the rest one by one.
  s.send(k3DT + std::string(1, '\0') + as_string(sent[0]));
  s.send(sent[1]);
  s.send(sent[2]);
  s.end_marker(k3DTBytes);
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  s.close();

  const auto got = f.recorder.volumes();
  ASSERT_EQ(got.size(), 3u);
  const AfniRtHeader expected = *parse_afni_rt_header(k3DT).value;
  for (size_t v = 0; v < 3; ++v) {
    const VolumeHeader& h = got[v].header;
    EXPECT_EQ(h.session, "afnitest");
    EXPECT_EQ(h.run, "run-01");
    EXPECT_EQ(h.index, static_cast<int64_t>(v));
    EXPECT_EQ(h.dims, (std::array<int64_t, 3>{7, 5, 3}));
    EXPECT_EQ(h.voxel_mm, (std::array<double, 3>{2.0, 2.0, 2.5}));
    EXPECT_EQ(h.affine, expected.affine);
    EXPECT_DOUBLE_EQ(h.affine[0][3], 7.0);    // 7 mm right
    EXPECT_DOUBLE_EQ(h.affine[1][3], 5.0);    // 5 mm anterior
    EXPECT_DOUBLE_EQ(h.affine[2][3], -10.0);  // 10 mm inferior
    EXPECT_EQ(h.datatype, DataType::kInt16);
    EXPECT_DOUBLE_EQ(h.tr_s, 1.5);
    EXPECT_TRUE(h.slice_timing_s.empty());
    EXPECT_EQ(h.payload_bytes, k3DTBytes);
    EXPECT_EQ(got[v].payload, sent[v]);
    EXPECT_EQ(h.checksum, crc32(sent[v]));
  }
  const auto ends = f.recorder.ends();
  EXPECT_EQ(ends[0].session, "afnitest");
  EXPECT_EQ(ends[0].run, "run-01");
  EXPECT_EQ(ends[0].num_volumes, 3);
  const AfniRtCounters c = f.counters();
  EXPECT_EQ(c.control_connections, 1);
  EXPECT_EQ(c.data_connections, 1);
  EXPECT_EQ(c.runs, 1);
  EXPECT_EQ(c.end_markers, 1);
  EXPECT_EQ(c.images, 3);
  EXPECT_EQ(c.received, 3);
  EXPECT_EQ(c.acked, 3);
  EXPECT_EQ(c.runs_closed, 1);
}

TEST(AfniRtReceiver, AlternatingBigEndianSlicesAreReassembled) {
  Fixture f;
  Source s(f.receiver().control_port());
  s.open();
  const int nx = 6, ny = 4, nz = 5;
  s.header(
      "ACQUISITION_TYPE 2D+zt\nZORDER alt\nDATUM float\nBYTEORDER MSB_FIRST\nXYMATRIX 6 4 5\nXYFOV 12 8\n"
      "ZDELTA 3\nXYZAXES R-L P-A I-S\nTR 2\n");
  std::vector<std::vector<float>> volumes;
  std::mt19937 rng(7);
  std::normal_distribution<float> value(100.0f, 30.0f);
  for (int v = 0; v < 2; ++v) {
    std::vector<float> vol(nx * ny * nz);
    for (float& x : vol) x = value(rng);
    volumes.push_back(vol);
    // Slices in alternating order (0, 2, 4, 1, 3), each float big-endian.
    for (int k : {0, 2, 4, 1, 3}) {
      std::string slice(nx * ny * 4, '\0');
      std::memcpy(slice.data(), vol.data() + k * nx * ny, slice.size());
      for (size_t at = 0; at < slice.size(); at += 4) std::reverse(slice.begin() + at, slice.begin() + at + 4);
      s.send(slice);
    }
  }
  s.close();  // a disconnect between volumes ends the run
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  const auto got = f.recorder.volumes();
  ASSERT_EQ(got.size(), 2u);
  for (int v = 0; v < 2; ++v) {
    ASSERT_EQ(got[v].payload.size(), volumes[v].size() * 4);
    std::vector<float> back(volumes[v].size());
    std::memcpy(back.data(), got[v].payload.data(), got[v].payload.size());
    EXPECT_EQ(back, volumes[v]) << "volume " << v;
    EXPECT_EQ(got[v].header.datatype, DataType::kFloat32);
    const std::vector<double> alt{0.0, 1.2, 0.4, 1.6, 0.8};  // TR 2 s over 5 slices, even slices first
    ASSERT_EQ(got[v].header.slice_timing_s.size(), 5u);
    for (size_t k = 0; k < 5; ++k) EXPECT_NEAR(got[v].header.slice_timing_s[k], alt[k], 1e-12);
  }
  EXPECT_EQ(f.recorder.ends()[0].num_volumes, 2);
  EXPECT_EQ(f.counters().images, 10);
}

TEST(AfniRtReceiver, RunsAfterTheEndMarkerAndOnNewControlConnections) {
  Fixture f;
  {
    Source a(f.receiver().control_port());
    a.open();
    a.header(k3DT);
    a.send(random_bytes(k3DTBytes, 1));
    a.send(random_bytes(k3DTBytes, 2));
    a.end_marker(k3DTBytes);
    // rtfeedme -break: a new header on the same data connection starts the next run.
    a.header("ACQUISITION_TYPE 3D+t\nXYMATRIX 4 4 2\nXYFOV 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nDATUM byte\nTR 1\n");
    a.send(random_bytes(32, 3));
    ASSERT_TRUE(eventually([&] { return f.recorder.volumes().size() == 3; }));
    a.close();
  }
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 2; }));
  {
    Source b(f.receiver().control_port());
    b.open();
    b.header(k3DT);
    const Bytes third = random_bytes(k3DTBytes, 4);
    b.send(third);
    b.close();
  }
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 3; }));
  const auto got = f.recorder.volumes();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].header.run, "run-01");
  EXPECT_EQ(got[1].header.run, "run-01");
  EXPECT_EQ(got[1].header.index, 1);
  EXPECT_EQ(got[2].header.run, "run-02");
  EXPECT_EQ(got[2].header.index, 0);
  EXPECT_EQ(got[2].header.datatype, DataType::kUint8);
  EXPECT_EQ(got[3].header.run, "run-03");
  EXPECT_EQ(got[3].header.index, 0);
  const auto ends = f.recorder.ends();
  EXPECT_EQ(ends[0].run, "run-01");
  EXPECT_EQ(ends[0].num_volumes, 2);
  EXPECT_EQ(ends[1].run, "run-02");
  EXPECT_EQ(ends[1].num_volumes, 1);
  EXPECT_EQ(ends[2].run, "run-03");
  EXPECT_EQ(ends[2].num_volumes, 1);
  const AfniRtCounters c = f.counters();
  EXPECT_EQ(c.runs, 3);
  EXPECT_EQ(c.data_connections, 2);
  EXPECT_EQ(c.end_markers, 1);
}

TEST(AfniRtReceiver, SourceThatDisconnectsMidVolumeKeepsCompleteVolumes) {
  Fixture f;
  {
    Source s(f.receiver().control_port());
    s.open();
    s.header(k3DT);
    s.send(random_bytes(k3DTBytes, 11));
    s.send(random_bytes(k3DTBytes / 2, 12));  // half a volume, then gone
    s.close();
  }
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  EXPECT_EQ(f.recorder.volumes().size(), 1u);
  EXPECT_EQ(f.recorder.ends()[0].num_volumes, 1);
  EXPECT_EQ(f.counters().short_reads, 1);
  {
    // Per slice: a whole volume and two slices of the next, ending at a slice boundary.
    Source s(f.receiver().control_port());
    s.open();
    s.header("ACQUISITION_TYPE 2D+zt\nXYMATRIX 4 4 3\nXYFOV 8\nZDELTA 2\nXYZAXES R-L A-P I-S\n");
    for (uint32_t i = 0; i < 5; ++i) s.send(random_bytes(32, 20 + i));
    s.close();
  }
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 2; }));
  const auto got = f.recorder.volumes();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].header.run, "run-02");
  EXPECT_EQ(f.recorder.ends()[1].num_volumes, 1);
  EXPECT_EQ(f.counters().short_reads, 1);
}

TEST(AfniRtReceiver, GarbageOnTheControlChannelIsTurnedAway) {
  Fixture f;
  const uint16_t port = f.receiver().control_port();
  int64_t refused = 0;
  auto expect_refused = [&](const std::string& what) {
    ++refused;
    EXPECT_TRUE(eventually([&] { return f.counters().control_rejected == refused; })) << what;
  };
  Source s(port);
  s.send_control(std::string("hello") + '\0');
  expect_refused("not tcp:");
  std::string binary = as_string(random_bytes(1000, 5));
  for (char& c : binary) c = c == '\0' ? 'x' : c;
  s.send_control(binary);  // no '\0' at all, then the connection closes
  expect_refused("binary without NUL");
  s.send_control(std::string("shm:grv:1M") + '\0');
  expect_refused("shared memory");
  s.send_control(std::string("tcp:localhost:99999") + '\0');
  expect_refused("bad port");
  s.send_control(std::string("tcp:localhost:7953\n3T_toafni") + '\0');
  expect_refused("info program");
  s.send_control("");  // connect and close
  expect_refused("empty");
  // A data connection from another address than the control connection's is refused; the source's own is taken.
  Source t(port);
  t.open("127.0.0.2");
  ASSERT_TRUE(eventually([&] { return f.counters().foreign_data_connections == 1; }));
  t.connect_data("127.0.0.1");
  t.header(k3DT);
  t.send(random_bytes(k3DTBytes, 9));
  t.close();
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  EXPECT_EQ(f.recorder.volumes().size(), 1u);
  EXPECT_EQ(f.counters().control_connections, refused + 1);
}

TEST(AfniRtReceiver, SilentSourcesTimeOut) {
  AfniRtOptions o = Fixture::options();
  o.handshake_timeout = std::chrono::milliseconds(100);
  Fixture f(o);
  const uint16_t port = f.receiver().control_port();
  asio::io_context io;
  tcp::socket mute(io);
  mute.connect(loopback(port));  // connects, says nothing, stays
  ASSERT_TRUE(eventually([&] { return f.counters().control_rejected == 1; }));
  Source s(port);
  s.send_control("tcp:localhost:" + std::to_string(free_port()) + std::string(1, '\0'));  // never connects to it
  ASSERT_TRUE(eventually([&] { return f.counters().control_rejected == 2; }));
  Source t(port);
  t.open();
  t.header(k3DT);
  t.send(random_bytes(k3DTBytes, 3));
  t.close();
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
}

TEST(AfniRtReceiver, BadHeaderClosesTheConnectionAndTheReceiverGoesOn) {
  Fixture f;
  const uint16_t port = f.receiver().control_port();
  {
    Source s(port);
    s.open();
    s.header("XYMATRIX 4 4 2\nXYFOV 8\nZDELTA 2\nXYZAXES R-L A-P I-S\nDATUM complex\n");
    ASSERT_TRUE(eventually([&] { return f.counters().headers_rejected == 1; }));
    EXPECT_TRUE(s.closed_by_peer());
  }
  {
    Source s(port);
    s.open();
    s.send(std::string(kMaxHeaderBytes + 100, 'A'));  // no '\0'
    ASSERT_TRUE(eventually([&] { return f.counters().headers_rejected == 2; }));
    EXPECT_TRUE(s.closed_by_peer());
  }
  Source s(port);
  s.open();
  s.header(k3DT);
  s.send(random_bytes(k3DTBytes, 9));
  s.close();
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  EXPECT_EQ(f.recorder.volumes().size(), 1u);
  EXPECT_EQ(f.recorder.volumes()[0].header.run, "run-01");  // refused headers start no run
}

TEST(AfniRtReceiver, RefusedVolumeEndsTheSessionAndClosesTheRunShort) {
  Fixture f;
  f.recorder.refuse(1);
  Source s(f.receiver().control_port());
  s.open();
  s.header(k3DT);
  s.send(random_bytes(k3DTBytes, 1));
  s.send(random_bytes(k3DTBytes, 2));
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 1; }));
  EXPECT_TRUE(s.closed_by_peer());
  EXPECT_EQ(f.recorder.volumes().size(), 1u);
  EXPECT_EQ(f.recorder.ends()[0].num_volumes, 1);
  EXPECT_EQ(f.counters().rejected, 1);
}

TEST(AfniRtReceiver, ChannelsGetTheirOwnRuns) {
  Fixture f;
  Source s(f.receiver().control_port());
  s.open();
  s.header("NUM_CHAN 2\n" + k3DT);
  std::vector<Bytes> sent;
  for (uint32_t v = 0; v < 4; ++v) {
    sent.push_back(random_bytes(k3DTBytes, 40 + v));
    s.send(sent.back());
  }
  s.close();
  ASSERT_TRUE(eventually([&] { return f.recorder.ends().size() == 2; }));
  const auto got = f.recorder.volumes();
  ASSERT_EQ(got.size(), 4u);
  for (size_t v = 0; v < 4; ++v) {
    EXPECT_EQ(got[v].header.run, v % 2 == 0 ? "run-01-ch1" : "run-01-ch2");
    EXPECT_EQ(got[v].header.index, static_cast<int64_t>(v / 2));
    EXPECT_EQ(got[v].payload, sent[v]);
  }
  for (const EndOfRun& e : f.recorder.ends()) EXPECT_EQ(e.num_volumes, 2);
}

TEST(AfniRtReceiver, StopsFromAnotherThreadAndBeforeRun) {
  Recorder r;
  AfniRtReceiver early(Fixture::options(), r.handler());
  early.stop();
  early.run();  // returns at once
  AfniRtReceiver idle(Fixture::options(), r.handler());
  std::thread t([&] { idle.run(); });
  idle.stop();
  t.join();
  SUCCEED();
}

TEST(AfniRtReceiver, InvalidOptionsAndBusyPortsThrow) {
  Recorder r;
  AfniRtOptions bad = Fixture::options();
  bad.session = "a/b";
  EXPECT_THROW(AfniRtReceiver(bad, r.handler()), std::invalid_argument);
  bad = Fixture::options();
  bad.address = "not-an-ip";
  EXPECT_THROW(AfniRtReceiver(bad, r.handler()), std::invalid_argument);
  EXPECT_THROW(AfniRtReceiver(Fixture::options(), VolumeHandler{}), std::invalid_argument);
  AfniRtReceiver first(Fixture::options(), r.handler());
  AfniRtOptions same = Fixture::options();
  same.control_port = first.control_port();
  EXPECT_THROW(AfniRtReceiver(same, r.handler()), std::runtime_error);
  EXPECT_EQ(afni_run_id("run-", 3, 1, 2), "run-03-ch2");
  EXPECT_EQ(afni_run_id("run-", 12, 0, 1), "run-12");
}

// The header Dimon (oblique data: OBLIQUE_XFORM) or rtfeedme (cardinal data: XYZFIRST with direction letters) would
// send for a dataset of this geometry: axes named after each voxel axis's nearest direction, FOV = n * voxel size.
std::string header_like_afni_sources(const ImageHeader& g, bool as_short) {
  static constexpr std::array<std::array<const char*, 2>, 3> kAxis{{{"L-R", "R-L"}, {"P-A", "A-P"}, {"I-S", "S-I"}}};
  static constexpr std::array<std::array<char, 2>, 3> kToward{{{'R', 'L'}, {'A', 'P'}, {'S', 'I'}}};
  const Eigen::Matrix4d& a = g.affine;
  std::string axes, first;
  bool oblique = false;
  for (int c = 0; c < 3; ++c) {
    int r = 0;
    a.block<3, 1>(0, c).cwiseAbs().maxCoeff(&r);
    oblique = oblique || a.block<3, 1>(0, c).cwiseAbs().sum() > std::abs(a(r, c)) + 1e-6;
    axes += std::string(" ") + kAxis[r][a(r, c) < 0 ? 1 : 0];
    first += fmt::format(" {:f}{}", std::abs(a(r, 3)), kToward[r][a(r, 3) < 0 ? 1 : 0]);
  }
  std::string h = fmt::format(
      "ACQUISITION_TYPE 3D+t\nTR {:f}\nXYFOV {:f} {:f} {:f}\nXYMATRIX {} {} {}\nDATUM {}\n"
      "XYZAXES{}\nXYZFIRST{}\nBYTEORDER LSB_FIRST\n",
      g.tr_s, g.dims[0] * g.voxel_mm[0], g.dims[1] * g.voxel_mm[1], g.dims[2] * g.voxel_mm[2], g.dims[0], g.dims[1],
      g.dims[2], as_short ? "short" : "float", axes, first);
  if (oblique) {
    h += "OBLIQUE_XFORM";
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) h += fmt::format(" {:f}", r < 2 ? -a(r, c) : a(r, c));  // RAS -> DICOM (LPS)
    }
    h += "\n";
  }
  return h;
}

// Real BOLD series (nitime's oblique fmri1, nipy's cardinal functional) sent volume by volume through the receiver
// into a real IngestCore: the recorded bold.nii.gz has the input's voxels and affine.
TEST(AfniRtReceiver, RealBoldIsRecordedWithItsGeometry) {
  for (const char* name : {"nitime/fmri1.nii.gz", "nipy/functional.nii.gz"}) {
    const auto path = test::installed_data(name);
    if (!path) GTEST_SKIP() << test::missing_installed_data(name);
    const Image input = read_nifti(*path);
    const ImageHeader& g = input.header();
    bool integral = g.source_type == DataType::kInt16;
    for (float v : input.data()) integral = integral && v == std::round(v) && std::abs(v) <= 32767;
    const std::string header = header_like_afni_sources(g, integral);

    test::TempDir tmp("afni-rt-real");
    IngestCore core(tmp.path());
    AfniRtReceiver receiver(Fixture::options(), core.as_handler(),
                            [&core](const EndOfRun& e) { return core.handle_end_of_run(e); });
    std::thread thread([&] { receiver.run(); });
    Source s(receiver.control_port());
    s.open();
    s.header(header);
    for (int64_t t = 0; t < input.nt(); ++t) {
      const auto vol = input.volume(t);
      std::string bytes;
      if (integral) {
        std::vector<int16_t> v(vol.begin(), vol.end());
        bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * 2);
      } else {
        bytes.assign(reinterpret_cast<const char*>(vol.data()), vol.size() * 4);
      }
      s.send(bytes);
    }
    s.end_marker(static_cast<size_t>(g.voxels_per_volume()) * (integral ? 2 : 4));
    ASSERT_TRUE(eventually([&] { return receiver.counters().runs_closed == 1; })) << name;
    s.close();
    receiver.stop();
    thread.join();
    core.wait_for_run_files();

    const Image bold = read_nifti(tmp.path() / "runs" / "run-01" / "bold.nii.gz");
    EXPECT_EQ(bold.header().dims, g.dims) << name;
    EXPECT_EQ(bold.nt(), input.nt()) << name;
    EXPECT_NEAR(bold.header().tr_s, g.tr_s, 1e-5) << name;
    EXPECT_LE((bold.header().affine - g.affine).cwiseAbs().maxCoeff(), kAffineTolerance) << name << "\n"
                                                                                         << bold.header().affine;
    EXPECT_EQ(bold.data(), input.data()) << name;
  }
}

}  // namespace
}  // namespace rtf::stream::afni
