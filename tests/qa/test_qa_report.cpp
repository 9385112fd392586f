// qa_report.html and what it is made of: encode_png decoded back with zlib (every colour type, CRCs, pixel bytes),
// base64 against RFC 4648's vectors and random round trips, the carpet's z-scores, clipping, NaN and block averages,
// the trace plots' threshold, gaps and y range, the tSNR mosaic's tiling and colours; then whole pages on an odd grid
// (37x29x11, 53 volumes): every embedded image decoded from its data: URI (signature, IHDR size), every table's rows,
// n/a, reached/never, escaping, nothing external, and the one-volume and empty runs.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/io/base64.hpp"
#include "core/io/png_encode.hpp"
#include "core/qa/qa_plots.hpp"
#include "core/qa/qa_report.hpp"

namespace rtf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// A PNG as encode_png writes it (8 bits, filter 0), decoded: every chunk's CRC checked, the IDATs inflated.
struct Decoded {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

Decoded decode_png(const std::vector<uint8_t>& png) {
  Decoded out;
  EXPECT_GE(png.size(), 8u);
  if (png.size() < 8 || std::memcmp(png.data(), "\x89PNG\r\n\x1a\n", 8) != 0) {
    ADD_FAILURE() << "no PNG signature";
    return out;
  }
  std::vector<uint8_t> idat;
  bool seen_end = false;
  for (size_t at = 8; at + 12 <= png.size() && !seen_end;) {
    const uint32_t length = be32(png, at);
    if (at + 12 + length > png.size()) {
      ADD_FAILURE() << "chunk past the end";
      return out;
    }
    const std::string type(reinterpret_cast<const char*>(&png[at + 4]), 4);
    const uLong crc = crc32(0L, &png[at + 4], static_cast<uInt>(length + 4));
    EXPECT_EQ(be32(png, at + 8 + length), static_cast<uint32_t>(crc)) << type;
    const uint8_t* data = &png[at + 8];
    if (type == "IHDR") {
      EXPECT_EQ(at, 8u) << "IHDR first";
      EXPECT_EQ(length, 13u);
      out.width = static_cast<int>(be32(png, at + 8));
      out.height = static_cast<int>(be32(png, at + 12));
      EXPECT_EQ(data[8], 8) << "bit depth";
      out.channels = data[9] == 0 ? 1 : data[9] == 2 ? 3 : data[9] == 6 ? 4 : 0;
      EXPECT_NE(out.channels, 0) << "colour type " << int{data[9]};
      EXPECT_EQ(data[12], 0) << "interlace";
    } else if (type == "IDAT") {
      idat.insert(idat.end(), data, data + length);
    } else if (type == "IEND") {
      seen_end = true;
      EXPECT_EQ(at + 12, png.size()) << "bytes after IEND";
    }
    at += 12 + length;
  }
  EXPECT_TRUE(seen_end);
  const size_t row = static_cast<size_t>(out.width) * static_cast<size_t>(out.channels);
  std::vector<uint8_t> raw(static_cast<size_t>(out.height) * (row + 1));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, idat.data(), idat.size()) != Z_OK || raw_size != raw.size()) {
    ADD_FAILURE() << "IDAT does not inflate to " << raw.size() << " bytes";
    return out;
  }
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* r = &raw[static_cast<size_t>(y) * (row + 1)];
    EXPECT_EQ(r[0], 0) << "filter of row " << y;
    out.pixels.insert(out.pixels.end(), r + 1, r + 1 + row);
  }
  return out;
}

std::array<uint8_t, 3> pixel(const RgbImage& img, int x, int y) {
  const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3;
  return {img.rgb[i], img.rgb[i + 1], img.rgb[i + 2]};
}

// <img> elements of a page: alt text and the decoded bytes of the data: URI.
struct PageImage {
  std::string alt;
  Decoded png;
};

std::string attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return {};
  const size_t start = at + key.size();
  return tag.substr(start, tag.find('"', start) - start);
}

std::vector<PageImage> page_images(const std::string& html) {
  std::vector<PageImage> out;
  for (size_t at = html.find("<img "); at != std::string::npos; at = html.find("<img ", at + 1)) {
    const std::string tag = html.substr(at, html.find('>', at) - at);
    const std::string src = attribute(tag, "src");
    const std::string prefix = "data:image/png;base64,";
    EXPECT_EQ(src.rfind(prefix, 0), 0u) << tag.substr(0, 80);
    const auto bytes = base64_decode(std::string_view(src).substr(std::min(src.size(), prefix.size())));
    EXPECT_TRUE(bytes.has_value()) << "not base64: " << attribute(tag, "alt");
    out.push_back({attribute(tag, "alt"), bytes ? decode_png(*bytes) : Decoded{}});
  }
  return out;
}

// Rows (<tr>) of each table with the given class, in page order.
std::vector<int> table_rows(const std::string& html, const std::string& cls) {
  std::vector<int> out;
  const std::string open = "<table class=\"" + cls + "\">";
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const size_t end = html.find("</table>", at);
    int rows = 0;
    for (size_t r = html.find("<tr>", at); r < end; r = html.find("<tr>", r + 1)) ++rows;
    out.push_back(rows);
  }
  return out;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The odd-sized run of the report tests: 37x29x11 grid, 53 volumes, a carpet of 700 voxels (250 grey matter).
QaReportInput odd_run() {
  QaReportInput in;
  in.title = "sub-01_task-rest_bold.nii.gz";
  in.tr_s = 2;
  in.volumes = 53;
  std::mt19937 rng(37);
  std::normal_distribution<double> noise(0, 1);
  QaTrace fd{"FD (mm)", {}, 0.5};
  QaTrace dvars{"DVARS", {}, kNaN};
  QaTrace outliers{"outlier fraction", {}, 0.05};
  QaTrace global{"global signal", {}, kNaN};
  QaTrace quality{"quality index", {}, kNaN};
  for (int t = 0; t < 53; ++t) {
    fd.values.push_back(t == 0 ? kNaN : 0.1 + 0.05 * std::abs(noise(rng)) + (t == 30 ? 1.2 : 0.0));
    dvars.values.push_back(t == 0 ? kNaN : 20 + noise(rng));
    outliers.values.push_back(t % 17 == 5 ? kNaN : 0.001 * std::abs(noise(rng)));
    global.values.push_back(1000 + 2 * noise(rng));
    quality.values.push_back(0.01 + 0.002 * std::abs(noise(rng)));
  }
  in.traces = {fd, dvars, outliers, global, quality};
  in.carpet_rows = 700;
  in.carpet_split = 250;
  in.carpet.resize(700 * 53);
  for (auto& v : in.carpet) v = static_cast<float>(500 + 10 * noise(rng));
  in.carpet[3 * 53 + 7] = std::numeric_limits<float>::quiet_NaN();
  in.dims = {37, 29, 11};
  in.tsnr.resize(37 * 29 * 11);
  in.mask.resize(in.tsnr.size());
  for (int64_t z = 0; z < 11; ++z) {
    for (int64_t y = 0; y < 29; ++y) {
      for (int64_t x = 0; x < 37; ++x) {
        const auto i = static_cast<size_t>((z * 29 + y) * 37 + x);
        const double r = std::hypot((x - 18) / 15.0, (y - 14) / 12.0);
        in.mask[i] = r < 1 ? 1 : 0;
        in.tsnr[i] = static_cast<float>(60 * (1 - 0.5 * r) + 3 * noise(rng));
      }
    }
  }
  in.metrics = {{"tsnr", 48.25},   {"aor", 0.0012}, {"aqi", 0.0107},  {"dvars_mean", kNaN},
                {"fd_mean", 0.13}, {"fd_num", 1},   {"fd_perc", 1.89}};
  in.usable = {
      {0.2, 1.7, 12.5, 0, 51}, {0.3, 0, 12.5, std::numeric_limits<double>::infinity(), 0}, {0.5, 1.73, 12.5, 4.31, 52}};
  in.usable[0].minutes_to_target = 0;  // reached
  in.usable[0].minutes = 13;
  in.flagged = {{30, 4, -17.5}, {45, 9, 23.25}};
  in.notes = {
      {"input", "/data/sub-01/func/bold.nii.gz"}, {"mask", "brain mask of the mean volume"}, {"device", "PoCL cpu"}};
  return in;
}

TEST(EncodePng, DecodesBackToTheSamePixelsInEveryFormat) {
  std::mt19937 rng(5);
  for (PngPixels format : {PngPixels::kGrey, PngPixels::kRgb, PngPixels::kRgba}) {
    const int w = 13, h = 7;
    const auto channels = static_cast<size_t>(format);
    std::vector<uint8_t> pixels(static_cast<size_t>(w * h) * channels);
    for (auto& b : pixels) b = static_cast<uint8_t>(rng());
    const Decoded d = decode_png(encode_png(w, h, pixels, format));
    EXPECT_EQ(d.width, w);
    EXPECT_EQ(d.height, h);
    EXPECT_EQ(d.channels, static_cast<int>(channels));
    EXPECT_EQ(d.pixels, pixels);
    EXPECT_THROW(encode_png(w, h, std::span<const uint8_t>(pixels).first(10), format), std::runtime_error);
    EXPECT_THROW(encode_png(0, h, {}, format), std::runtime_error);
  }
  const std::vector<uint8_t> one{1, 2, 3, 4};
  EXPECT_EQ(decode_png(encode_png(1, 1, one)).pixels, one);  // the RGBA overload
}

TEST(Base64, Rfc4648VectorsRoundTripsAndRejects) {
  const std::vector<std::pair<std::string, std::string>> vectors{{"", ""},
                                                                 {"f", "Zg=="},
                                                                 {"fo", "Zm8="},
                                                                 {"foo", "Zm9v"},
                                                                 {"foob", "Zm9vYg=="},
                                                                 {"fooba", "Zm9vYmE="},
                                                                 {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    const std::vector<uint8_t> bytes(plain.begin(), plain.end());
    EXPECT_EQ(base64_encode(bytes), coded);
    EXPECT_EQ(base64_decode(coded), bytes);
  }
  std::mt19937 rng(11);
  for (size_t n = 0; n < 300; n += 7) {
    std::vector<uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
  }
  EXPECT_EQ(base64_encode(std::vector<uint8_t>{0xfb, 0xff}), "+/8=");
  for (const char* bad : {"Zg=", "Z===", "Zh==", "Zm9=v", "Zm9v!A==", "=AAA", "Zg==Zg==", "AAAA AAA"}) {
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  }
}

TEST(CarpetImage, RowsZScoredClippedAndNaNLeftOut) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row 0: mean 2, SD 1 -> z -1, 1; row 1 constant (SD 0) with a NaN -> 0; row 2: one value 3 SD high -> clipped.
  const std::vector<float> carpet{1, 3, 1, 3, 10, 10, 10, nan, 0, 0, 0, 0};
  std::vector<float> spike(10, 0.0f);
  spike[9] = 100;  // mean 10, SD 30: z 3 -> +2 (white), the others -1/3
  std::vector<float> rows = carpet;
  const CarpetImage c = carpet_image(rows, 3, 4, 0);
  ASSERT_EQ(c.image.width, 4);
  ASSERT_EQ(c.image.height, 3);
  EXPECT_EQ(c.split_pixel_row, -1);
  const std::array<uint8_t, 4> row0{64, 191, 64, 191};  // (z + 2) / 4 * 255
  for (int x = 0; x < 4; ++x) {
    EXPECT_EQ(pixel(c.image, x, 0), (std::array<uint8_t, 3>{row0[x], row0[x], row0[x]})) << x;
    EXPECT_EQ(pixel(c.image, x, 1), (std::array<uint8_t, 3>{128, 128, 128})) << x;
    EXPECT_EQ(pixel(c.image, x, 2), (std::array<uint8_t, 3>{128, 128, 128})) << x;
  }
  const CarpetImage s = carpet_image(spike, 1, 10, 0);
  EXPECT_EQ(pixel(s.image, 9, 0), (std::array<uint8_t, 3>{255, 255, 255}));
  EXPECT_EQ(pixel(s.image, 0, 0)[0], 106);  // z = -1/3
}

TEST(CarpetImage, BlockAveragesAndTheSplitLine) {
  // 1300 rows x 2500 volumes: at most 1200 x 600, blocks of up to 3 x 3. Every row is -1 for the first half of the
  // run and +1 after it (z = -1, +1): each block of columns on one side of the middle keeps that z.
  const int64_t rows = 1300, volumes = 2500;
  std::vector<float> carpet(static_cast<size_t>(rows * volumes));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < volumes; ++t) carpet[static_cast<size_t>(r * volumes + t)] = (t < volumes / 2 ? -1.f : 1.f);
  }
  const CarpetImage c = carpet_image(carpet, rows, volumes, 0);
  EXPECT_EQ(c.image.width, 1200);
  EXPECT_EQ(c.image.height, 600);
  EXPECT_EQ(c.rows_per_pixel, 3);
  EXPECT_EQ(c.volumes_per_pixel, 3);
  EXPECT_EQ(pixel(c.image, 0, 0)[0], 64);
  EXPECT_EQ(pixel(c.image, 1199, 599)[0], 191);
  // Grey matter first (rows 0..399), the split line at its share of the 599 rows of voxels.
  const CarpetImage split = carpet_image(carpet, rows, volumes, 400);
  EXPECT_EQ(split.image.height, 600);
  const int line = split.split_pixel_row;
  EXPECT_EQ(line, 184);  // round(599 * 400 / 1300)
  for (int x = 0; x < 1200; x += 97) {
    EXPECT_EQ(pixel(split.image, x, line), (std::array<uint8_t, 3>{255, 140, 0}));
    EXPECT_NE(pixel(split.image, x, line - 1), (std::array<uint8_t, 3>{255, 140, 0}));
    EXPECT_NE(pixel(split.image, x, line + 1), (std::array<uint8_t, 3>{255, 140, 0}));
  }
  // Small carpets keep one pixel per value, the split row added.
  const CarpetImage small = carpet_image(std::span<const float>(carpet).first(5 * 7), 5, 7, 2);
  EXPECT_EQ(small.image.width, 7);
  EXPECT_EQ(small.image.height, 6);
  EXPECT_EQ(small.split_pixel_row, 2);
  EXPECT_THROW(carpet_image(std::span<const float>(carpet).first(10), 3, 4, 0), std::invalid_argument);
}

TEST(TracePlot, ThresholdGapsAndRange) {
  const std::array<uint8_t, 3> red{214, 39, 40}, blue{31, 95, 168};
  auto has = [](const RgbImage& img, int x0, int x1, int y0, int y1, std::array<uint8_t, 3> c) {
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        if (pixel(img, x, y) == c) return true;
      }
    }
    return false;
  };
  const std::vector<double> rising{0, 0.25, 0.5, 0.75, 1};
  const TracePlot p = trace_plot(rising, 0.5, 200, 100);
  EXPECT_EQ(p.y_min, 0);
  EXPECT_EQ(p.y_max, 1);
  EXPECT_EQ(p.y_step, 0.5);
  const int threshold_row = kTracePad + static_cast<int>(std::lround(0.5 * (99 - 2 * kTracePad)));
  EXPECT_TRUE(has(p.image, 0, 199, threshold_row, threshold_row, red));
  EXPECT_FALSE(has(p.image, 0, 199, 0, threshold_row - 2, red));
  // The y range reaches the threshold above the data.
  const TracePlot above = trace_plot(std::vector<double>{0.1, 0.2}, 0.5, 200, 100);
  EXPECT_GE(above.y_max, 0.5);
  EXPECT_LE(above.y_min, 0.1);
  // A gap: values only at both ends; nothing blue in the middle; each end a dot.
  const std::vector<double> gap{1, kNaN, kNaN, kNaN, 1};
  const TracePlot g = trace_plot(gap, kNaN, 201, 60);
  EXPECT_FALSE(has(g.image, 20, 180, 0, 59, blue));
  EXPECT_TRUE(has(g.image, 0, 10, 0, 59, blue));
  EXPECT_TRUE(has(g.image, 190, 200, 0, 59, blue));
  EXPECT_FALSE(has(g.image, 0, 200, 0, 59, red));
  EXPECT_LT(g.y_min, 1);  // a constant trace gets a range around its value
  EXPECT_GT(g.y_max, 1);
  // One value: a dot in the middle; no finite value: no picture.
  const TracePlot one = trace_plot(std::vector<double>{3}, kNaN, 101, 40);
  EXPECT_TRUE(has(one.image, 45, 55, 0, 39, blue));
  EXPECT_EQ(trace_plot(std::vector<double>{kNaN, kNaN}, 1.0).image.width, 0);
  EXPECT_EQ(trace_plot(std::vector<double>{}, 1.0).image.width, 0);
}

TEST(TsnrMosaic, TilesColoursAndTheRobustRange) {
  const QaReportInput in = odd_run();
  std::vector<float> tsnr = in.tsnr;
  std::vector<uint8_t> mask = in.mask;
  // Voxel (18, 14, 5) inside the mask far above the 99th percentile -> the top of viridis; (18, 15, 5) NaN -> magenta.
  const auto at = [](int64_t x, int64_t y, int64_t z) { return static_cast<size_t>((z * 29 + y) * 37 + x); };
  tsnr[at(18, 14, 5)] = 1e6f;
  tsnr[at(18, 15, 5)] = std::numeric_limits<float>::quiet_NaN();
  const MosaicImage m = tsnr_mosaic(in.dims, tsnr, mask);
  EXPECT_EQ(m.columns, 3);  // ceil(sqrt(11 * 29 / 37))
  EXPECT_EQ(m.image.width, 3 * 38 - 1);
  EXPECT_EQ(m.image.height, 4 * 30 - 1);
  EXPECT_EQ(m.slices_shown, 11);
  EXPECT_GT(m.range_max, 40);
  EXPECT_LT(m.range_max, 80);
  // Slice 5: column 2, row 1 -> origin (76, 30); y up.
  const auto px = [](int64_t x, int64_t y, int64_t z) {
    return std::pair<int, int>{static_cast<int>((z % 3) * 38 + x), static_cast<int>((z / 3) * 30 + 28 - y)};
  };
  auto [x1, y1] = px(18, 14, 5);
  EXPECT_EQ(pixel(m.image, x1, y1), viridis(1));
  auto [x2, y2] = px(18, 15, 5);
  EXPECT_EQ(pixel(m.image, x2, y2), (std::array<uint8_t, 3>{255, 0, 255}));
  auto [x3, y3] = px(0, 0, 5);
  EXPECT_EQ(pixel(m.image, x3, y3), (std::array<uint8_t, 3>{28, 28, 28}));  // outside the mask
  EXPECT_EQ(pixel(m.image, 37, 0), (std::array<uint8_t, 3>{0, 0, 0}));      // between tiles
  EXPECT_EQ(pixel(m.image, 112, 118), (std::array<uint8_t, 3>{0, 0, 0}));   // the unused 12th tile
  EXPECT_EQ(viridis(0), (std::array<uint8_t, 3>{68, 1, 84}));
  EXPECT_EQ(viridis(2), (std::array<uint8_t, 3>{253, 231, 37}));
  EXPECT_EQ(viridis(kNaN), viridis(0));
  // A large grid is subsampled within the pixel budget.
  const std::array<int64_t, 3> big{600, 500, 40};
  const MosaicImage b = tsnr_mosaic(big, std::vector<float>(600 * 500 * 40, 5.0f), {});
  EXPECT_EQ(b.in_plane_step, 3);
  EXPECT_LE(static_cast<int64_t>(b.image.width) * b.image.height, 1'700'000);
  EXPECT_THROW(tsnr_mosaic(in.dims, std::vector<float>(10), {}), std::invalid_argument);
}

TEST(QaReport, EveryImageDecodesAndEveryTableHasItsRows) {
  QaReportInput in = odd_run();
  in.traces.push_back({"respiration", {}, kNaN});                        // empty
  in.traces.push_back({"undefined", std::vector<double>(53, kNaN), 1});  // no finite value
  const std::string html = qa_report_html(in);
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  const std::vector<PageImage> images = page_images(html);
  ASSERT_EQ(images.size(), 8u);  // carpet, 5 traces, mosaic, colour bar
  EXPECT_EQ(images[0].alt, "carpet plot");
  EXPECT_EQ(images[0].png.width, 53);
  EXPECT_EQ(images[0].png.height, 600);  // 599 rows of voxels and the split line
  for (size_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(images[i].alt, in.traces[i - 1].name + " against volume");
    EXPECT_EQ(images[i].png.width, 760);
    EXPECT_EQ(images[i].png.height, 150);
  }
  EXPECT_EQ(images[6].alt, "tSNR mosaic");
  EXPECT_EQ(images[6].png.width, 113);
  EXPECT_EQ(images[6].png.height, 119);
  EXPECT_EQ(images[7].png.width, 256);
  EXPECT_EQ(images[7].png.height, 12);
  for (const PageImage& img : images) {
    EXPECT_EQ(img.png.channels, 3) << img.alt;
    EXPECT_EQ(img.png.pixels.size(), static_cast<size_t>(img.png.width * img.png.height * 3)) << img.alt;
  }
  // The carpet's pixels in the page equal carpet_image's.
  const CarpetImage c = carpet_image(in.carpet, 700, 53, 250);
  EXPECT_EQ(images[0].png.pixels, c.image.rgb);

  EXPECT_EQ(table_rows(html, "notes"), std::vector<int>{2 + 3});
  EXPECT_EQ(table_rows(html, "metrics"), std::vector<int>{1 + 7});
  EXPECT_EQ(table_rows(html, "usable"), std::vector<int>{1 + 3});
  EXPECT_EQ(table_rows(html, "flagged"), std::vector<int>{1 + 2});
  EXPECT_EQ(count(html, "<table"), 4);
  EXPECT_NE(html.find("<td>dvars_mean</td><td class=\"num\">n/a</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>tsnr</td><td class=\"num\">48.25</td>"), std::string::npos);
  EXPECT_NE(html.find(">reached</td>"), std::string::npos);
  EXPECT_NE(html.find(">never (no frame kept)</td>"), std::string::npos);
  EXPECT_NE(html.find(">4.3</td>"), std::string::npos);  // 4.31 minutes to target, one decimal
  EXPECT_NE(html.find("<td class=\"num\">30</td><td class=\"num\">4</td><td class=\"num\">-17.5</td><td>drop-out"),
            std::string::npos);
  EXPECT_NE(html.find("<td>spike</td>"), std::string::npos);
  EXPECT_NE(html.find("<b>respiration</b>: no values"), std::string::npos);
  EXPECT_NE(html.find("<b>undefined</b>: no defined value"), std::string::npos);
  EXPECT_NE(html.find("n/a at 1 volume (gaps)"), std::string::npos);  // FD at volume 0
  EXPECT_NE(html.find("threshold 0.5 (dashed red)"), std::string::npos);
  EXPECT_NE(html.find("grey matter (250 rows)"), std::string::npos);
  // Self-contained: no script, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(count(html, "src=\""), count(html, "src=\"data:image/png;base64,"));
}

TEST(QaReport, EscapesEveryString) {
  QaReportInput in;
  in.title = "<script>alert(\"x\")</script> & 'q'";
  in.volumes = 3;
  in.notes = {{"<b>label</b>", "a < b && c > d"}};
  in.metrics = {{"snr<&>", 1.5}};
  in.traces = {{"FD <mm> & \"x\"", {0.1, 0.2, 0.3}, 0.2}};
  const std::string html = qa_report_html(in);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>label"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"), std::string::npos);
  EXPECT_NE(html.find("<th>&lt;b&gt;label&lt;/b&gt;</th><td>a &lt; b &amp;&amp; c &gt; d</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>snr&lt;&amp;&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("alt=\"FD &lt;mm&gt; &amp; &quot;x&quot; against volume\""), std::string::npos);
  EXPECT_EQ(page_images(html).size(), 1u);
}

TEST(QaReport, OneVolume) {
  QaReportInput in;
  in.title = "one";
  in.volumes = 1;
  in.traces = {{"FD (mm)", {kNaN}, 0.5}, {"DVARS", {12.0}, kNaN}, {"global signal", {1000.0}, kNaN}};
  in.carpet_rows = 5;
  in.carpet = {1, 2, 3, 4, 5};
  in.dims = {4, 3, 2};
  in.tsnr.assign(24, 0.0f);  // one volume: SD 0, tSNR 0
  const std::string html = qa_report_html(in);
  const std::vector<PageImage> images = page_images(html);
  ASSERT_EQ(images.size(), 5u);  // carpet, DVARS, global signal, mosaic, colour bar
  EXPECT_EQ(images[0].png.width, 1);
  EXPECT_EQ(images[0].png.height, 5);
  for (uint8_t v : images[0].png.pixels) EXPECT_EQ(v, 128);  // z = 0 everywhere
  EXPECT_EQ(images[1].png.width, 760);
  EXPECT_NE(html.find("<b>FD (mm)</b>: no defined value"), std::string::npos);
  EXPECT_NE(html.find("<span>volume 0</span>"), std::string::npos);
  EXPECT_NE(html.find("1 volume &middot;"), std::string::npos);
  EXPECT_EQ(images[3].png.width, 2 * 5 - 1);  // two 4x3 slices side by side
  EXPECT_EQ(images[3].png.height, 3);
}

TEST(QaReport, EmptyRun) {
  QaReportInput in;
  const std::string html = qa_report_html(in);
  EXPECT_TRUE(page_images(html).empty());
  EXPECT_NE(html.find("(untitled run)"), std::string::npos);
  EXPECT_NE(html.find("no carpet plot: the run has no volume"), std::string::npos);
  EXPECT_NE(html.find("no traces"), std::string::npos);
  EXPECT_NE(html.find("no tSNR map"), std::string::npos);
  EXPECT_NE(html.find("none computed"), std::string::npos);
  EXPECT_NE(html.find("no tally"), std::string::npos);
  EXPECT_NE(html.find("<h2 id=\"flagged\">Flagged slices</h2>\n<p class=\"none\">none</p>"), std::string::npos);
  EXPECT_EQ(count(html, "<table"), 1);  // the notes: volumes and TR
  EXPECT_EQ(table_rows(html, "notes"), std::vector<int>{2});
  // Volumes but no carpet: the reason is said.
  in.volumes = 4;
  EXPECT_NE(qa_report_html(in).find("no carpet plot: no voxel series were given"), std::string::npos);
}

TEST(QaReport, RefusesInconsistentSizes) {
  QaReportInput in;
  in.volumes = 4;
  in.carpet_rows = 2;
  in.carpet.resize(7);
  EXPECT_THROW(qa_report_html(in), std::invalid_argument);
  in.carpet.resize(8);
  in.carpet_split = 3;
  EXPECT_THROW(qa_report_html(in), std::invalid_argument);
  in.carpet_split = 1;
  EXPECT_NO_THROW(qa_report_html(in));
  in.dims = {2, 2, 2};
  in.tsnr.resize(7);
  EXPECT_THROW(qa_report_html(in), std::invalid_argument);
  in.tsnr.resize(8);
  in.mask.resize(5);
  EXPECT_THROW(qa_report_html(in), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
