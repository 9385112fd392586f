// Labelling volumes from events: the lag, an event of duration 0, volumes covered by two conditions left out, rest,
// a subset of conditions, blocks numbered across runs, classes in byte order, and the errors (one class, unknown
// condition, negative lag).
#include <gtest/gtest.h>

#include "core/decoding/decoding_samples.hpp"

namespace rtf {
namespace {

LabelOptions options(double lag, std::string rest = "", std::vector<std::string> conditions = {}) {
  LabelOptions o;
  o.lag_s = lag;
  o.rest = std::move(rest);
  o.conditions = std::move(conditions);
  return o;
}

Event ev(double onset, double duration, const char* type) {
  return {onset, duration, type, std::nullopt};
}

TEST(DecodingSamples, LabelsVolumesWithTheLaggedEvents) {
  // TR 2 s, 12 volumes at 0, 2, ..., 22 s; lag 4 s: "face" [6, 12) -> volumes 3, 4, 5; "house" [14, 18) -> 7, 8;
  // "face" of duration 0 at 16 s -> [20, 22) -> volume 10.
  const DecodingRun run{12, 2.0, {ev(2, 6, "face"), ev(10, 4, "house"), ev(16, 0, "face")}};
  const DecodingSamples s = label_volumes({run}, options(4.0));
  EXPECT_EQ(s.classes, (std::vector<std::string>{"face", "house"}));
  EXPECT_EQ(s.volume, (std::vector<int>{3, 4, 5, 7, 8, 10}));
  EXPECT_EQ(s.label, (std::vector<int>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(s.block, (std::vector<int>{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(s.unlabelled, 6);
  EXPECT_EQ(s.ambiguous, 0);
  EXPECT_EQ(s.class_counts(), (std::vector<int64_t>{4, 2}));
}

TEST(DecodingSamples, OverlapsOfTwoConditionsAreLeftOutAndRestIsAClassWhenNamed) {
  // Lag 0: "b" [0, 6) -> 0, 1, 2; "a" [4, 10) -> 2 (ambiguous), 3, 4; rest: 5 .. 7 (one stretch).
  const DecodingRun run{8, 2.0, {ev(0, 6, "b"), ev(4, 6, "a")}};
  const DecodingSamples s = label_volumes({run}, options(0.0, "rest"));
  EXPECT_EQ(s.classes, (std::vector<std::string>{"a", "b", "rest"}));
  EXPECT_EQ(s.volume, (std::vector<int>{0, 1, 3, 4, 5, 6, 7}));
  EXPECT_EQ(s.label, (std::vector<int>{1, 1, 0, 0, 2, 2, 2}));
  EXPECT_EQ(s.block, (std::vector<int>{0, 0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(s.ambiguous, 1);
  const DecodingSamples only = label_volumes({run}, options(0.0, "rest", {"rest", "b"}));
  EXPECT_EQ(only.classes, (std::vector<std::string>{"b", "rest"}));
  EXPECT_EQ(only.volume, (std::vector<int>{0, 1, 5, 6, 7}));
  EXPECT_EQ(only.unlabelled, 2);
}

TEST(DecodingSamples, BlocksAreNumberedAcrossRuns) {
  const DecodingRun one{6, 1.0, {ev(0, 3, "x"), ev(3, 3, "y")}};
  const DecodingRun two{6, 1.0, {ev(0, 2, "y"), ev(2, 4, "x")}};
  const DecodingSamples s = label_volumes({one, two}, options(0.0));
  EXPECT_EQ(s.run, (std::vector<int>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(s.block, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(s.label, (std::vector<int>{0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0}));
}

TEST(DecodingSamples, RefusesOneClassUnknownConditionsAndANegativeLag) {
  const DecodingRun run{10, 2.0, {ev(0, 8, "only")}};
  try {
    label_volumes({run}, options(0.0));
    FAIL() << "one class accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("every labelled volume is 'only'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(label_volumes({run}, options(0.0, "", {"only", "other"})), std::invalid_argument);
  EXPECT_THROW(label_volumes({run}, options(-1.0)), std::invalid_argument);
  EXPECT_THROW(label_volumes({}, {}), std::invalid_argument);
  EXPECT_NO_THROW(label_volumes({run}, options(0.0, "rest")));
}

}  // namespace
}  // namespace rtf
