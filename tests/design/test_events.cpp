// BIDS events.tsv parsing: valid files (column order, extra columns, CRLF, BOM, comments, n/a), malformed files
// (each error names file, line and column), random garbage (only EventsFormatError, never a crash), and files on disk.
// ctest-label: unit
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "core/design/events.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

// Expects parse_events_tsv(text) to throw EventsFormatError at (line, column) with `fragment` in the message.
void expect_error(std::string_view text, size_t line, size_t column, std::string_view fragment) {
  try {
    parse_events_tsv(text, "run-1_events.tsv");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const EventsFormatError& e) {
    EXPECT_EQ(e.file(), "run-1_events.tsv");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("run-1_events.tsv"), std::string::npos) << e.what();
  }
}

TEST(Events, ReadsAValidFile) {
  const auto t = parse_events_tsv(
      "onset\tduration\ttrial_type\tresponse_time\n"
      "0.5\t2\tfaces\t0.43\n"
      "10\t0\thouses\tn/a\n"
      "-1.5\t1e-1\tfaces\t0.5\n");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_TRUE(t.has_trial_type_column);
  EXPECT_FALSE(t.has_modulation_column);
  EXPECT_EQ(t.skipped_rows, 0u);
  EXPECT_DOUBLE_EQ(t.events[0].onset_s, 0.5);
  EXPECT_DOUBLE_EQ(t.events[0].duration_s, 2.0);
  EXPECT_EQ(t.events[0].trial_type, "faces");
  EXPECT_FALSE(t.events[0].modulation.has_value());
  EXPECT_EQ(t.events[1].trial_type, "houses");
  EXPECT_DOUBLE_EQ(t.events[2].onset_s, -1.5);  // before the first volume: allowed
  EXPECT_DOUBLE_EQ(t.events[2].duration_s, 0.1);
  EXPECT_EQ(trial_types(t.events), (std::vector<std::string>{"faces", "houses"}));
}

TEST(Events, ColumnsInAnyOrderWithModulation) {
  const auto t = parse_events_tsv(
      "trial_type\tmodulation\tduration\tonset\n"
      "b\t1.5\t0\t3\n"
      "a\tn/a\t1\t4\n");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_TRUE(t.has_modulation_column);
  EXPECT_EQ(t.events[0].trial_type, "b");
  EXPECT_DOUBLE_EQ(t.events[0].onset_s, 3.0);
  EXPECT_DOUBLE_EQ(*t.events[0].modulation, 1.5);
  EXPECT_FALSE(t.events[1].modulation.has_value());
  EXPECT_DOUBLE_EQ(t.events[1].duration_s, 1.0);
}

TEST(Events, ToleratesCrlfBomCommentsBlankLinesAndSpaces) {
  const auto t = parse_events_tsv(
      "\xEF\xBB\xBF# written by a stimulus program\r\n"
      "\r\n"
      "onset\tduration\ttrial_type\r\n"
      "# a comment between rows\r\n"
      " 1.0 \t 0 \t go \r\n"
      "\t\t\r\n"
      "+2\tn/a\tstop\t\r\n");  // a trailing empty field is accepted; duration n/a is an impulse
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].trial_type, "go");
  EXPECT_DOUBLE_EQ(t.events[0].onset_s, 1.0);
  EXPECT_DOUBLE_EQ(t.events[1].onset_s, 2.0);
  EXPECT_DOUBLE_EQ(t.events[1].duration_s, 0.0);
  EXPECT_EQ(t.events[1].trial_type, "stop");
}

TEST(Events, TrialTypeNaSkipsTheRowAndAMissingColumnGivesOneCondition) {
  const auto t = parse_events_tsv("onset\tduration\ttrial_type\n1\t0\tn/a\n2\t0\tgo\n");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.skipped_rows, 1u);
  const auto single = parse_events_tsv("onset\tduration\n1\t0\n5\t2\n");
  EXPECT_FALSE(single.has_trial_type_column);
  ASSERT_EQ(single.events.size(), 2u);
  EXPECT_EQ(single.events[1].trial_type, kDefaultTrialType);
}

TEST(Events, MalformedFilesNameLineAndColumn) {
  expect_error("", 0, 0, "no header row");
  expect_error("# only a comment\n\n", 0, 0, "no header row");
  expect_error("duration\ttrial_type\n1\ta\n", 1, 0, "no 'onset' column");
  expect_error("onset\ttrial_type\n1\ta\n", 1, 0, "no 'duration' column");
  expect_error("onset\tduration\tonset\n", 1, 3, "duplicate column name");
  expect_error("onset\t\tduration\n", 1, 2, "empty column name");
  expect_error("onset\tduration\ttrial_type\n1\t0\ta\nabc\t0\tb\n", 3, 1, "'abc' is not a finite number");
  expect_error("onset\tduration\ttrial_type\n1.5s\t0\ta\n", 2, 1, "'1.5s' is not a finite number");
  expect_error("onset\tduration\ttrial_type\nn/a\t0\ta\n", 2, 1, "n/a is not allowed");
  expect_error("onset\tduration\ttrial_type\n1\t-2\ta\n", 2, 2, "negative duration");
  expect_error("onset\tduration\ttrial_type\n1\tinf\ta\n", 2, 2, "not a finite number");
  expect_error("onset\tduration\ttrial_type\nnan\t0\ta\n", 2, 1, "not a finite number");
  expect_error("onset\tduration\ttrial_type\n1\t0\n", 2, 0, "2 fields, the header has 3");
  expect_error("onset\tduration\ttrial_type\n1 0 a\n", 2, 0, "separated by tabs");
  expect_error("onset\tduration\ttrial_type\n1\t0\ta\textra\n", 2, 4, "more fields than the header");
  expect_error("onset\tduration\ttrial_type\n1\t0\t\n", 2, 3, "empty trial type");
  expect_error("onset\tduration\tmodulation\n1\t0\thigh\n", 2, 3, "'high' is not a finite number");
  expect_error("onset\tduration\n1,5\t0\n", 2, 1, "'1,5' is not a finite number");  // decimal comma
  expect_error("onset\tduration\n0x10\t0\n", 2, 1, "not a finite number");
  expect_error("onset\tduration\n\x01\xff\t0\n", 2, 1, "'\\x01\\xff'");  // binary shown escaped
}

TEST(Events, RandomGarbageNeverCrashes) {
  std::mt19937 rng(20240605);
  const std::string alphabet("onsetduraiyp_\t\n\r#/.-+e0123456789 \x00\xff", 35);
  const std::string valid = "onset\tduration\ttrial_type\tmodulation\n1\t0\ta\t2\n3.5\t2\tb\tn/a\n";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = valid;
    if (trial % 2 == 0) {  // mutate a valid file
      for (int k = 0; k < 1 + trial % 5; ++k) text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
      text.resize(rng() % (text.size() + 1));
    } else {  // pure noise
      text.resize(rng() % 200);
      for (char& c : text) c = alphabet[rng() % alphabet.size()];
    }
    try {
      const auto t = parse_events_tsv(text);
      for (const Event& e : t.events) {
        EXPECT_TRUE(std::isfinite(e.onset_s));
        EXPECT_GE(e.duration_s, 0.0);
        EXPECT_FALSE(e.trial_type.empty());
      }
    } catch (const EventsFormatError&) {
      // expected for most inputs
    }
  }
}

TEST(Events, ReadsFilesAndReportsMissingOnes) {
  const test::TempDir dir("rtf-events");
  {
    std::ofstream out(dir / "sub-01_task-faces_events.tsv", std::ios::binary);
    out << "onset\tduration\ttrial_type\n0\t1\tfaces\n";
  }
  const auto t = read_events_tsv(dir / "sub-01_task-faces_events.tsv");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].trial_type, "faces");
  EXPECT_THROW(read_events_tsv(dir / "absent.tsv"), EventsFormatError);
  try {
    read_events_tsv(dir / "absent.tsv");
  } catch (const EventsFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.tsv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rtf
