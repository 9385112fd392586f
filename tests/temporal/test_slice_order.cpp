// Slice orders, slice times, BIDS SliceTiming parsing, validation and the default reference slice:
// exact answers worked out by hand.
// ctest-label: unit
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/temporal/slice_order.hpp"

namespace rtf {
namespace {

using Order = std::vector<int>;

TEST(SliceOrder, AcquisitionOrders) {
  EXPECT_EQ(acquisition_order(SliceOrder::kAscending, 5), (Order{0, 1, 2, 3, 4}));
  EXPECT_EQ(acquisition_order(SliceOrder::kDescending, 5), (Order{4, 3, 2, 1, 0}));
  EXPECT_EQ(acquisition_order(SliceOrder::kInterleaved, 5), (Order{0, 2, 4, 1, 3}));
  EXPECT_EQ(acquisition_order(SliceOrder::kInterleaved, 6), (Order{0, 2, 4, 1, 3, 5}));
  // Siemens: an even slice count starts with the second slice; an odd one like plain interleaved.
  EXPECT_EQ(acquisition_order(SliceOrder::kInterleavedSiemens, 6), (Order{1, 3, 5, 0, 2, 4}));
  EXPECT_EQ(acquisition_order(SliceOrder::kInterleavedSiemens, 5), (Order{0, 2, 4, 1, 3}));
  EXPECT_EQ(acquisition_order(SliceOrder::kInterleaved, 1), (Order{0}));
  EXPECT_THROW(acquisition_order(SliceOrder::kAscending, 0), std::invalid_argument);
}

TEST(SliceOrder, SliceTimesAreKthOfNTimesTr) {
  const auto t = slice_times(SliceOrder::kInterleaved, 5, 2.0);
  // order 0,2,4,1,3 -> slice 0 at 0, 2 at 0.4, 4 at 0.8, 1 at 1.2, 3 at 1.6
  const std::vector<double> expected = {0.0, 1.2, 0.4, 1.6, 0.8};
  ASSERT_EQ(t.size(), expected.size());
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], expected[i], 1e-12) << i;
  const auto d = slice_times(SliceOrder::kDescending, 4, 1.0);
  EXPECT_NEAR(d[3], 0.0, 1e-12);
  EXPECT_NEAR(d[0], 0.75, 1e-12);
  EXPECT_THROW(slice_times(SliceOrder::kAscending, 4, 0.0), std::invalid_argument);
  EXPECT_THROW(slice_times(SliceOrder::kAscending, 4, -2.0), std::invalid_argument);
}

TEST(SliceOrder, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_slice_order("ascending"), SliceOrder::kAscending);
  EXPECT_EQ(parse_slice_order("descending"), SliceOrder::kDescending);
  EXPECT_EQ(parse_slice_order("interleaved"), SliceOrder::kInterleaved);
  EXPECT_EQ(parse_slice_order("interleaved-siemens"), SliceOrder::kInterleavedSiemens);
  for (auto o :
       {SliceOrder::kAscending, SliceOrder::kDescending, SliceOrder::kInterleaved, SliceOrder::kInterleavedSiemens}) {
    EXPECT_EQ(parse_slice_order(to_string(o)), o);
  }
  try {
    parse_slice_order("sideways");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sideways"), std::string::npos) << msg;
    EXPECT_NE(msg.find("interleaved-siemens"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_slice_order(""), std::invalid_argument);
  EXPECT_THROW(parse_slice_order("Ascending"), std::invalid_argument);
}

TEST(SliceTiming, ParsesBidsJson) {
  const auto t = parse_slice_timing_json(R"({"RepetitionTime": 2.0, "SliceTiming": [0.0, 1.0, 0.5, 1.5]})");
  EXPECT_EQ(t, (std::vector<double>{0.0, 1.0, 0.5, 1.5}));
  EXPECT_THROW(parse_slice_timing_json(R"({"RepetitionTime": 2.0})"), std::invalid_argument);
  EXPECT_THROW(parse_slice_timing_json(R"({"SliceTiming": [0.0, "x"]})"), std::invalid_argument);
  EXPECT_THROW(parse_slice_timing_json(R"({"SliceTiming": []})"), std::invalid_argument);
  EXPECT_THROW(parse_slice_timing_json("{not json"), std::invalid_argument);
}

TEST(SliceTiming, ParsesTextLists) {
  EXPECT_EQ(parse_slice_timing_text("0 0.5\n1.0, 1.5 # comment 9\n# 7\n0.25;"),
            (std::vector<double>{0.0, 0.5, 1.0, 1.5, 0.25}));
  EXPECT_THROW(parse_slice_timing_text("0 0.5 abc"), std::invalid_argument);
  EXPECT_THROW(parse_slice_timing_text("0.5x"), std::invalid_argument);
  EXPECT_THROW(parse_slice_timing_text("  # nothing\n"), std::invalid_argument);
}

TEST(SliceTiming, ReadsFilesByExtension) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("rtf_slice_order_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "bold.json") << R"({"SliceTiming": [0, 0.7, 1.4]})";
    std::ofstream(dir / "times.txt") << "0\n0.7\n1.4\n";
  }
  EXPECT_EQ(read_slice_timing(dir / "bold.json"), (std::vector<double>{0.0, 0.7, 1.4}));
  EXPECT_EQ(read_slice_timing(dir / "times.txt"), (std::vector<double>{0.0, 0.7, 1.4}));
  EXPECT_THROW(read_slice_timing(dir / "missing.json"), std::invalid_argument);
  std::filesystem::remove_all(dir);
}

TEST(SliceTiming, ValidatesTimes) {
  const std::vector<double> t = {0.0, 0.5, 1.0, 1.5};
  EXPECT_NO_THROW(validate_slice_times(t, 4, 2.0));
  EXPECT_THROW(validate_slice_times(t, 4, 0.0), std::invalid_argument);
  EXPECT_THROW(validate_slice_times(t, 4, -1.0), std::invalid_argument);
  EXPECT_THROW(validate_slice_times(t, 5, 2.0), std::invalid_argument);
  EXPECT_THROW(validate_slice_times(t, 4, 1.5), std::invalid_argument);  // 1.5 is not < TR
  const std::vector<double> negative = {0.0, -0.1};
  EXPECT_THROW(validate_slice_times(negative, 2, 2.0), std::invalid_argument);
  const std::vector<double> nan = {0.0, std::nan("")};
  EXPECT_THROW(validate_slice_times(nan, 2, 2.0), std::invalid_argument);
}

TEST(SliceTiming, DefaultReferenceIsTheSliceAcquiredAtPositionHalfN) {
  EXPECT_EQ(default_reference_slice(slice_times(SliceOrder::kAscending, 5, 2.0)), 2);
  EXPECT_EQ(default_reference_slice(slice_times(SliceOrder::kAscending, 6, 2.0)), 3);
  EXPECT_EQ(default_reference_slice(slice_times(SliceOrder::kDescending, 6, 2.0)), 2);
  EXPECT_EQ(default_reference_slice(slice_times(SliceOrder::kInterleaved, 5, 2.0)), 4);         // 0 2 [4] 1 3
  EXPECT_EQ(default_reference_slice(slice_times(SliceOrder::kInterleavedSiemens, 6, 2.0)), 0);  // 1 3 5 [0] 2 4
  // Multiband (two slices per shot): ties broken by slice index.
  const std::vector<double> mb = {0.0, 0.5, 1.0, 0.0, 0.5, 1.0};  // sorted: 0 3 1 [4] 2 5
  EXPECT_EQ(default_reference_slice(mb), 4);
}

TEST(SliceTiming, ReferenceTimeChoices) {
  const auto t = slice_times(SliceOrder::kAscending, 4, 2.0);  // 0, 0.5, 1, 1.5
  EXPECT_DOUBLE_EQ(reference_time(t, 2.0, std::nullopt, std::nullopt), 1.0);
  EXPECT_DOUBLE_EQ(reference_time(t, 2.0, 3, std::nullopt), 1.5);
  EXPECT_DOUBLE_EQ(reference_time(t, 2.0, std::nullopt, 0.3), 0.3);
  EXPECT_THROW(reference_time(t, 2.0, 4, std::nullopt), std::invalid_argument);
  EXPECT_THROW(reference_time(t, 2.0, -1, std::nullopt), std::invalid_argument);
  EXPECT_THROW(reference_time(t, 2.0, std::nullopt, 2.0), std::invalid_argument);
  EXPECT_THROW(reference_time(t, 2.0, 1, 0.5), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
