// The viewer's data side, without a window: decoding the results stream (valid messages, every malformed shape, random
// bytes), merging updates (new run, restarted server, sequence gaps, the recent-volume budget), slice orientation and
// overlay colouring, and the PNG writer (decoded back with zlib).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/support/temp_dir.hpp"
#include "viewer/png_writer.hpp"
#include "viewer/result_message.hpp"
#include "viewer/shared_viewer_data.hpp"
#include "viewer/slice_image.hpp"

namespace rtf::viewer {
namespace {

struct Message {
  nlohmann::json header;
  std::vector<std::vector<float>> data;
  std::vector<std::span<const std::byte>> frames() const {
    std::vector<std::span<const std::byte>> out;
    for (const auto& d : data) out.push_back(std::as_bytes(std::span<const float>(d)));
    return out;
  }
};

Message make_message(int64_t volume, int64_t seq, std::array<int64_t, 3> dims = {5, 4, 3}) {
  Message m;
  const int64_t n = dims[0] * dims[1] * dims[2];
  m.header = {{"run", "run-01"},
              {"volume", volume},
              {"seq", seq},
              {"skipped", 0},
              {"feedback", 0.25 * static_cast<double>(volume)},
              {"motion", {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}},
              {"fd_mm", 0.05},
              {"rois", {{"M1_L", 1000.0 + static_cast<double>(volume)}}},
              {"latency_ms", {{"written", 0.3}, {"uploaded", 0.6}, {"motion", 1.2}, {"end_to_end", 2.5}}},
              {"dims", dims},
              {"affine", {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1}},
              {"t_map_contrast", "task"},
              {"device", "test device"},
              {"design", {{"columns", {"task", "constant"}}, {"row", {0.5, 1.0}}}},
              {"regions", {"A", "B"}},
              {"counters", {{"received", volume + 1}, {"analysed", volume + 1}, {"skipped", 0}, {"missing", 0}}}};
  m.data.push_back(std::vector<float>(static_cast<size_t>(n), static_cast<float>(volume)));
  m.data.push_back(std::vector<float>(static_cast<size_t>(n), 4.0f));
  m.data.push_back({1.0f, 0.5f, 0.5f, 1.0f});
  m.header["frames"] = {{{"name", "volume"}, {"dtype", "float32"}, {"shape", dims}, {"bytes", n * 4}},
                        {{"name", "t_map"}, {"dtype", "float32"}, {"shape", dims}, {"bytes", n * 4}},
                        {{"name", "connectivity"}, {"dtype", "float32"}, {"shape", {2, 2}}, {"bytes", 16}}};
  return m;
}

TrUpdate decode(const Message& m) {
  auto r = decode_result_message(m.header.dump(), m.frames());
  if (auto* e = std::get_if<DecodeError>(&r)) ADD_FAILURE() << e->reason;
  return std::get<TrUpdate>(std::move(r));
}

TEST(ResultMessage, EveryFieldArrives) {
  const TrUpdate u = decode(make_message(7, 7));
  EXPECT_EQ(u.run, "run-01");
  EXPECT_EQ(u.device, "test device");
  EXPECT_EQ(u.sample.volume, 7);
  EXPECT_DOUBLE_EQ(u.sample.feedback, 1.75);
  EXPECT_DOUBLE_EQ(u.sample.motion[5], 0.6);
  ASSERT_EQ(u.roi_names.size(), 1u);
  EXPECT_DOUBLE_EQ(u.sample.rois[0], 1007.0);
  EXPECT_EQ(u.design_columns, (std::vector<std::string>{"task", "constant"}));
  EXPECT_EQ(u.sample.design_row, (std::vector<double>{0.5, 1.0}));
  ASSERT_EQ(u.sample.latency_ms.size(), latency_step_names().size());
  EXPECT_DOUBLE_EQ(u.sample.latency_ms.front(), 0.3);
  EXPECT_DOUBLE_EQ(u.sample.latency_ms.back(), 2.5);
  EXPECT_TRUE(std::isnan(u.sample.latency_ms[3]));  // "smoothed" absent
  EXPECT_EQ(u.dims, (std::array<int64_t, 3>{5, 4, 3}));
  EXPECT_EQ(u.volume.size(), 60u);
  EXPECT_EQ(u.t_map[59], 4.0f);
  EXPECT_EQ(u.regions_count, 2);
  EXPECT_EQ(u.regions.size(), 2u);
  EXPECT_EQ(u.received, 8);
}

TEST(ResultMessage, MalformedMessagesAreRefusedWithAReason) {
  const Message good = make_message(1, 1);
  auto refused = [](const nlohmann::json& header, const std::vector<std::span<const std::byte>>& frames) {
    auto r = decode_result_message(header.dump(), frames);
    return std::holds_alternative<DecodeError>(r) && !std::get<DecodeError>(r).reason.empty();
  };
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_result_message("{not json", good.frames())));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_result_message("[1,2]", good.frames())));
  auto frames = good.frames();
  frames.pop_back();
  EXPECT_TRUE(refused(good.header, frames));  // one frame missing
  frames = good.frames();
  frames[0] = frames[0].first(frames[0].size() - 4);
  EXPECT_TRUE(refused(good.header, frames));  // truncated frame
  nlohmann::json h = good.header;
  h.erase("volume");
  EXPECT_TRUE(refused(h, good.frames()));
  h = good.header;
  h["dims"] = {5, 4, 0};
  EXPECT_TRUE(refused(h, good.frames()));
  h = good.header;
  h["dims"] = {5, 4, 2};  // the maps no longer match
  EXPECT_TRUE(refused(h, good.frames()));
  h = good.header;
  h["frames"][1]["dtype"] = "float64";
  EXPECT_TRUE(refused(h, good.frames()));
  h = good.header;
  h["frames"][2]["shape"] = {4};
  h["frames"][2]["bytes"] = 16;
  EXPECT_TRUE(refused(h, good.frames()));  // connectivity not square
}

TEST(ResultMessage, RandomBytesNeverCrash) {
  std::mt19937 rng(5);
  const Message good = make_message(2, 2);
  const std::string text = good.header.dump();
  int refused = 0;
  for (int i = 0; i < 500; ++i) {
    std::string mutated = text;
    for (int k = 0; k < 4; ++k) mutated[rng() % mutated.size()] = static_cast<char>(rng() % 256);
    std::vector<std::byte> blob(rng() % 300);
    for (auto& b : blob) b = static_cast<std::byte>(rng() % 256);
    auto frames = good.frames();
    if (i % 2 == 0) frames[1] = std::span<const std::byte>(blob);
    refused += std::holds_alternative<DecodeError>(decode_result_message(mutated, frames)) ? 1 : 0;
  }
  EXPECT_GT(refused, 250);  // most mutations break the JSON or a frame; none may crash
}

TEST(ViewerData, HistoryGrowsAndIsClearedForANewRunOrARestartedServer) {
  ViewerData d;
  for (int64_t i = 0; i < 5; ++i) d.apply(decode(make_message(i, i)));
  EXPECT_EQ(d.history.size(), 5u);
  EXPECT_EQ(d.seq_gaps, 0);
  d.apply(decode(make_message(8, 8)));  // messages 5..7 were lost
  EXPECT_EQ(d.seq_gaps, 3);
  EXPECT_EQ(d.history.size(), 6u);
  EXPECT_EQ(d.device, "test device");
  d.apply(decode(make_message(0, 0)));  // the server restarted: sequence back to 0
  EXPECT_EQ(d.restarts, 1);
  EXPECT_EQ(d.history.size(), 1u);
  Message other = make_message(1, 1);
  other.header["run"] = "run-02";
  d.apply(decode(other));
  EXPECT_EQ(d.restarts, 2);
  EXPECT_EQ(d.run, "run-02");
  EXPECT_EQ(d.history.size(), 1u);
  EXPECT_EQ(d.voxel_mm(), (std::array<double, 3>{2.0, 2.0, 3.0}));
  // A restarted server whose first messages were lost: its stream id changed although seq went on rising.
  Message a = make_message(2, 50), b = make_message(3, 60);
  a.header["stream"] = "aaaa";
  b.header["stream"] = "bbbb";
  d.apply(decode(a));
  const int64_t restarts = d.restarts;
  d.apply(decode(b));
  EXPECT_EQ(d.restarts, restarts + 1);
  EXPECT_EQ(d.history.size(), 1u);
}

TEST(SharedViewerData, RecentVolumesStayWithinTheirBudgetAndGiveAVoxelSeries) {
  SharedViewerData shared(3 * 60 * sizeof(float));  // room for 3 volumes of 60 voxels
  for (int64_t i = 0; i < 6; ++i) shared.apply(decode(make_message(i, i)));
  const auto series = shared.voxel_series(17);
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series.front().first, 3);
  EXPECT_EQ(series.back().second, 5.0f);
  ViewerData copy;
  EXPECT_TRUE(shared.refresh(copy));
  EXPECT_FALSE(shared.refresh(copy));  // nothing new
  EXPECT_EQ(copy.history.size(), 6u);
  EXPECT_TRUE(shared.voxel_series(-1).empty());
  EXPECT_TRUE(shared.voxel_series(60).empty());
}

TEST(SliceImage, OrientationAndOverlay) {
  const std::array<int64_t, 3> dims{7, 5, 3};
  std::vector<float> volume(7 * 5 * 3, 100.0f), map(7 * 5 * 3, 0.0f);
  const std::array<int64_t, 3> marked{2, 3, 1};
  const size_t i = static_cast<size_t>(marked[0] + 7 * (marked[1] + 5 * marked[2]));
  volume[i] = 200.0f;
  map[i] = 5.0f;       // above the threshold, below saturation (white): hot
  map[i + 1] = -5.0f;  // x + 1: cool
  OverlaySettings o;
  for (Plane p : {Plane::kAxial, Plane::kCoronal, Plane::kSagittal}) {
    const SliceImage img = render_slice(volume, map, dims, {2, 2, 4}, p, marked, {0.0f, 200.0f}, o);
    // Find the hot pixel and map it back.
    int found = 0;
    for (int y = 0; y < img.height; ++y) {
      for (int x = 0; x < img.width; ++x) {
        const uint8_t* px =
            &img.rgba[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 4];
        if (px[0] > px[2] + 60) {
          EXPECT_EQ(slice_pixel_to_voxel(p, dims, marked, x, y), marked);
          ++found;
        }
      }
    }
    EXPECT_EQ(found, 1) << static_cast<int>(p);
  }
  const SliceImage axial = render_slice(volume, map, dims, {2, 3, 4}, Plane::kAxial, marked, {0.0f, 200.0f}, o);
  EXPECT_EQ(axial.width, 7);
  EXPECT_EQ(axial.height, 5);
  EXPECT_NEAR(axial.pixel_aspect, 2.0 / 3.0, 1e-12);
  // Axial: +y is up, so voxel y = 3 of 5 is row 1; the x + 1 neighbour is cool (blue > red).
  const uint8_t* cool = &axial.rgba[(1 * 7 + 3) * 4];
  EXPECT_GT(cool[2], cool[0]);
  o.negative = false;
  const SliceImage positive_only = render_slice(volume, map, dims, {2, 3, 4}, Plane::kAxial, marked, {0.0f, 200.0f}, o);
  const uint8_t* grey = &positive_only.rgba[(1 * 7 + 3) * 4];
  EXPECT_EQ(grey[0], grey[2]);  // grey underlay only
  // Background: no overlay where the underlay is below min_underlay.
  o.negative = true;
  o.min_underlay = 150.0f;  // only the marked voxel (200) is bright enough
  const SliceImage masked = render_slice(volume, map, dims, {2, 3, 4}, Plane::kAxial, marked, {0.0f, 200.0f}, o);
  const uint8_t* cool_masked = &masked.rgba[(1 * 7 + 3) * 4];
  EXPECT_EQ(cool_masked[0], cool_masked[2]);                                       // x + 1 (100): grey
  EXPECT_GT(masked.rgba[(1 * 7 + 2) * 4], masked.rgba[(1 * 7 + 2) * 4 + 2] + 60);  // the marked voxel: still hot
  const auto range = robust_range(volume);
  EXPECT_EQ(range.first, 100.0f);
}

// A message carrying ROI labels (bits per voxel): voxel 7 in ROI 0, voxel 8 in ROIs 0 and 1.
Message with_roi_labels(Message m, int64_t version, bool frame) {
  m.header["roi_status"] = "ready";
  m.header["roi_labels"] = {{"version", version}, {"names", {"M1_L", "seed"}}, {"in_this_message", frame}};
  if (frame) {
    std::vector<float> bits(60, 0.0f);
    bits[7] = 1.0f;
    bits[8] = 3.0f;
    m.data.push_back(bits);
    m.header["frames"].push_back({{"name", "roi_labels"}, {"dtype", "float32"}, {"shape", {5, 4, 3}}, {"bytes", 240}});
  }
  return m;
}

TEST(ViewerData, RoiLabelsAreKeptUntilAnotherVersionOrRunComes) {
  ViewerData d;
  d.apply(decode(make_message(0, 0)));
  EXPECT_TRUE(d.roi_labels.empty());
  EXPECT_EQ(d.roi_labels_version, -1);
  d.apply(decode(with_roi_labels(make_message(1, 1), 4, true)));
  ASSERT_EQ(d.roi_labels.size(), 60u);
  EXPECT_EQ(d.roi_labels[8], 3.0f);
  EXPECT_EQ(d.roi_label_names, (std::vector<std::string>{"M1_L", "seed"}));
  EXPECT_EQ(d.roi_status, "ready");
  d.apply(decode(with_roi_labels(make_message(2, 2), 4, false)));  // the header only: the labels stay
  EXPECT_EQ(d.roi_labels.size(), 60u);
  d.apply(decode(with_roi_labels(make_message(3, 3), 5, false)));  // another placement, its frame not here yet
  EXPECT_TRUE(d.roi_labels.empty());
  d.apply(decode(with_roi_labels(make_message(4, 4), 5, true)));
  EXPECT_EQ(d.roi_labels.size(), 60u);
  Message other = make_message(1, 5);
  other.header["run"] = "run-02";
  d.apply(decode(other));  // a new run: no ROIs until it sends its own
  EXPECT_TRUE(d.roi_labels.empty());
  EXPECT_EQ(d.roi_labels_version, -1);
  // A frame that does not match the grid is refused like any other.
  Message bad = with_roi_labels(make_message(5, 6), 6, true);
  bad.data.back().pop_back();
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_result_message(bad.header.dump(), bad.frames())));
}

TEST(SliceImage, RoiOutlinesAreDrawnOnTheEdgesOnly) {
  // A 5 x 4 block of ROI 0 in an axial slice of a 9 x 8 x 3 grid, with ROI 1 on its top-left 2 x 2 corner.
  const std::array<int64_t, 3> dims{9, 8, 3};
  std::vector<float> volume(9 * 8 * 3, 100.0f), labels(9 * 8 * 3, 0.0f);
  for (int64_t y = 2; y < 6; ++y) {
    for (int64_t x = 2; x < 7; ++x) labels[static_cast<size_t>(x + 9 * (y + 8 * 1))] = 1.0f;
  }
  for (int64_t y = 4; y < 6; ++y) {
    for (int64_t x = 2; x < 4; ++x) labels[static_cast<size_t>(x + 9 * (y + 8 * 1))] = 3.0f;
  }
  const std::array<int64_t, 3> cursor{4, 3, 1};
  SliceImage img = render_slice(volume, {}, dims, {2, 2, 2}, Plane::kAxial, cursor, {0.0f, 200.0f}, OverlaySettings{});
  const SliceImage plain = img;
  const int64_t drawn = draw_roi_outlines(img, labels, dims, Plane::kAxial, cursor);
  EXPECT_EQ(drawn, 15);  // the block's perimeter (5 x 4 less its 3 x 2 interior) and ROI 1's inner corner
  auto colour = [&](const SliceImage& i, int64_t x, int64_t y) {
    const int py = static_cast<int>(dims[1] - 1 - y);  // axial: +y up
    const uint8_t* p = &i.rgba[(static_cast<size_t>(py) * 9 + static_cast<size_t>(x)) * 4];
    return std::array<uint8_t, 3>{p[0], p[1], p[2]};
  };
  EXPECT_EQ(colour(img, 6, 2), roi_colour(0));  // a corner of ROI 0 alone: magenta
  EXPECT_EQ(colour(img, 6, 2), (std::array<uint8_t, 3>{255, 0, 255}));
  EXPECT_EQ(colour(img, 4, 3), colour(plain, 4, 3));  // inside: untouched
  EXPECT_EQ(colour(img, 0, 0), colour(plain, 0, 0));  // outside: untouched
  EXPECT_EQ(colour(img, 2, 5), roi_colour(0));        // in both ROIs, on both edges: the lower ROI's colour
  EXPECT_EQ(colour(img, 3, 4), roi_colour(1));        // ROI 1's inner corner: inside ROI 0, on ROI 1's edge
  // A slice that misses the ROIs draws nothing; labels of another grid are ignored.
  SliceImage other = plain;
  EXPECT_EQ(draw_roi_outlines(other, labels, dims, Plane::kAxial, {4, 3, 0}), 0);
  EXPECT_EQ(draw_roi_outlines(other, std::vector<float>(5, 1.0f), dims, Plane::kAxial, cursor), 0);
  // Coronal through y = 3 cuts the block along x: one row of 5 voxels, all on its edge.
  SliceImage coronal =
      render_slice(volume, {}, dims, {2, 2, 2}, Plane::kCoronal, cursor, {0.0f, 200.0f}, OverlaySettings{});
  EXPECT_EQ(draw_roi_outlines(coronal, labels, dims, Plane::kCoronal, cursor), 5);
  EXPECT_EQ(roi_centre(labels, dims, 0), (std::array<int64_t, 3>{4, 4, 1}));  // mean (4, 3.5, 1), rounded
  EXPECT_EQ(roi_centre(labels, dims, 1), (std::array<int64_t, 3>{3, 5, 1}));  // mean (2.5, 4.5): half away from 0
  EXPECT_EQ(roi_centre(labels, dims, 2)[0], -1);
}

TEST(PngWriter, DecodesBackToTheSamePixels) {
  test::TempDir tmp;
  const int w = 13, h = 7;
  std::vector<uint8_t> rgba(static_cast<size_t>(w * h * 4));
  std::mt19937 rng(3);
  for (auto& b : rgba) b = static_cast<uint8_t>(rng());
  write_png(tmp.path() / "a.png", w, h, rgba);
  std::ifstream f(tmp.path() / "a.png", std::ios::binary);
  const std::vector<uint8_t> png((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(png.size(), 8u + 25u);
  EXPECT_EQ(std::memcmp(png.data(), "\x89PNG\r\n\x1a\n", 8), 0);
  // IDAT follows IHDR (8 + 25 bytes); its length is big-endian.
  const size_t at = 8 + 25;
  const uint32_t length =
      (uint32_t{png[at]} << 24) | (uint32_t{png[at + 1]} << 16) | (uint32_t{png[at + 2]} << 8) | png[at + 3];
  ASSERT_EQ(std::memcmp(&png[at + 4], "IDAT", 4), 0);
  std::vector<uint8_t> raw(static_cast<size_t>(h * (w * 4 + 1)));
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(raw.data(), &raw_size, &png[at + 8], length), Z_OK);
  ASSERT_EQ(raw_size, raw.size());
  for (int y = 0; y < h; ++y) {
    EXPECT_EQ(raw[static_cast<size_t>(y * (w * 4 + 1))], 0);
    EXPECT_EQ(std::memcmp(&raw[static_cast<size_t>(y * (w * 4 + 1) + 1)], &rgba[static_cast<size_t>(y * w * 4)],
                          static_cast<size_t>(w * 4)),
              0);
  }
  EXPECT_THROW(write_png(tmp.path() / "b.png", w, h, std::span<const uint8_t>(rgba).first(10)), std::runtime_error);
}

}  // namespace
}  // namespace rtf::viewer
