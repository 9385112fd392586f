// The PUB header (result_header) against the feedback line (feedback_json): the fields for viewers (design row,
// conditions, atlas regions, device, counters) are in the header only, and each optional one is absent when its source
// is: no design or a volume past its rows, no connectivity frame.
#include <gtest/gtest.h>

#include "stream/pipeline/live_outputs.hpp"

namespace rtf::stream {
namespace {

using Names = std::vector<std::string>;

TrResult full_result() {
  TrResult r;
  r.run = "run-01";
  r.index = 5;
  r.dims = {4, 3, 2};
  r.design_columns = std::make_shared<const Names>(Names{"task", "rest", "constant"});
  r.design_row = {0.75, 0.0, 1.0};
  r.conditions = std::make_shared<const Names>(Names{"rest", "task"});
  r.regions = std::make_shared<const Names>(Names{"A", "B"});
  r.rois_in_atlas = 2;
  r.connectivity = {1.0f, 0.5f, 0.5f, 1.0f};
  return r;
}

TEST(ResultHeader, CarriesTheDesignRowRegionsDeviceAndCounters) {
  const TrResult r = full_result();
  IngestLatency latency;
  const LiveCounts counts{10, 7, 2, 1, 3, 1, 4};
  const nlohmann::json h = result_header(r, latency, 2, "0:0 cpu (PoCL)", counts);
  EXPECT_EQ(h["volume"], 5);
  EXPECT_EQ(h["skipped"], 2);
  EXPECT_EQ(h["design"]["columns"], nlohmann::json::array({"task", "rest", "constant"}));
  EXPECT_EQ(h["design"]["row"], nlohmann::json::array({0.75, 0.0, 1.0}));
  EXPECT_EQ(h["conditions"], nlohmann::json::array({"rest", "task"}));
  EXPECT_EQ(h["regions"], nlohmann::json::array({"A", "B"}));
  EXPECT_EQ(h["device"], "0:0 cpu (PoCL)");
  const nlohmann::json expected_counts = {{"received", 10},  {"analysed", 7}, {"skipped", 2},     {"dropped", 1},
                                          {"duplicates", 3}, {"missing", 1},  {"not_analysed", 4}};
  EXPECT_EQ(h["counters"], expected_counts);
  EXPECT_EQ(h["dims"], nlohmann::json::array({4, 3, 2}));
  EXPECT_EQ(h["affine"].size(), 16u);

  // The feedback line has none of them: it stays small.
  const nlohmann::json line = feedback_json(r, latency, 2);
  for (const char* k : {"design", "conditions", "regions", "device", "counters", "dims", "affine"}) {
    EXPECT_FALSE(line.contains(k)) << k;
  }
  // The header is the feedback line plus its own fields.
  for (const auto& [k, v] : line.items()) EXPECT_EQ(h[k], v) << k;
}

TEST(ResultHeader, OptionalFieldsAreAbsentWithoutTheirSource) {
  TrResult r = full_result();
  r.design_columns.reset();  // no design
  r.design_row.clear();
  r.conditions.reset();
  r.connectivity.clear();  // connectivity off or not read back: no frame, so no names for its rows
  const nlohmann::json h = result_header(r, IngestLatency{}, 0, "gpu", LiveCounts{});
  EXPECT_FALSE(h.contains("design"));
  EXPECT_FALSE(h.contains("conditions"));
  EXPECT_FALSE(h.contains("regions"));
  EXPECT_EQ(h["device"], "gpu");
  EXPECT_EQ(h["counters"]["received"], 0);  // counters are always there (0 without an ingest source)

  TrResult past = full_result();
  past.design_row.clear();  // a volume past the design's rows: the run has columns, this volume no row
  EXPECT_FALSE(result_header(past, IngestLatency{}, 0, "gpu", LiveCounts{}).contains("design"));
}

}  // namespace
}  // namespace rtf::stream
