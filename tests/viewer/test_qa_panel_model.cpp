// The QA panel's data side, without a window: decoding the header's `qa` and `qa_alarm` and the `qa_tsnr`, `qa_cnr`
// and `qa_carpet` frames (a full message, messages without QA, every malformed field and shape, unknown frames of any
// shape skipped, random mutations), the per-run model (traces with nulls, the sliding-window tSNR median and CNR p95,
// the carpet ring and its restarts, the last tSNR and CNR maps, flagged slices, the alarm list's order and bound, the
// reset by a new run), the tally and alarm texts, and the carpet and map mosaic images.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "viewer/qa_images.hpp"
#include "viewer/result_message.hpp"
#include "viewer/shared_viewer_data.hpp"

namespace rtf::viewer {
namespace {

constexpr std::array<int64_t, 3> kDims{5, 4, 3};
constexpr int64_t kVoxels = 60;

struct Message {
  nlohmann::json header;
  std::vector<std::vector<float>> data;
  std::vector<std::span<const std::byte>> frames() const {
    std::vector<std::span<const std::byte>> out;
    for (const auto& d : data) out.push_back(std::as_bytes(std::span<const float>(d)));
    return out;
  }
  void add_frame(const std::string& name, const nlohmann::json& shape, std::vector<float> values) {
    header["frames"].push_back(
        {{"name", name}, {"dtype", "float32"}, {"shape", shape}, {"bytes", values.size() * sizeof(float)}});
    data.push_back(std::move(values));
  }
};

nlohmann::json qa_object(int64_t volume, int64_t carpet_rows = 8, bool tsnr = true) {
  return {{"volume", volume},
          {"fd_mm", volume == 0 ? nlohmann::json(nullptr) : nlohmann::json(0.12)},
          {"global_signal", 812.3},
          {"outlier_fraction", volume < 2 ? nlohmann::json(nullptr) : nlohmann::json(0.004)},
          {"quality_index", volume < 2 ? nlohmann::json(nullptr) : nlohmann::json(0.012)},
          {"slice_z_worst", -9.1},
          {"worst_slice", 2},
          {"flagged_slices", {2, 0}},
          {"tsnr_median", 54.2},
          {"sliding_tsnr_median", volume < 3 ? nlohmann::json(nullptr) : nlohmann::json(48.5 + volume)},
          {"cnr_p95", 1.75},
          {"usable",
           {{{"fd_threshold_mm", 0.2}, {"frames", 40}, {"minutes", 0.33}, {"minutes_to_target", 12.1}},
            {{"fd_threshold_mm", 0.5}, {"frames", 41}, {"minutes", 0.34}, {"minutes_to_target", nullptr}}}},
          {"target_minutes", 12.5},
          {"thresholds", {{"fd_mm", 0.5}, {"outlier_fraction", 0.05}, {"slice_z", 8.0}, {"tsnr_min", nullptr}}},
          {"carpet_rows", carpet_rows},
          {"carpet_split", carpet_rows / 2},
          {"tsnr_map_in_this_message", tsnr}};
}

// A message of run `run` with the volume frame and, with `qa`, the QA header, a carpet column (value: volume) and,
// when `tsnr`, a tSNR map (value: 10 + volume).
Message make_message(int64_t volume, bool qa = true, bool tsnr = true, int64_t carpet_rows = 8,
                     const std::string& run = "run-01") {
  Message m;
  m.header = {{"run", run}, {"volume", volume}, {"seq", volume}, {"dims", kDims}, {"dvars", 11.0 + volume}};
  m.header["frames"] = nlohmann::json::array();
  m.add_frame("volume", kDims, std::vector<float>(kVoxels, 100.0f));
  if (qa) {
    m.header["qa"] = qa_object(volume, carpet_rows, tsnr);
    m.add_frame("qa_carpet", {carpet_rows},
                std::vector<float>(static_cast<size_t>(carpet_rows), static_cast<float>(volume)));
    if (tsnr) m.add_frame("qa_tsnr", kDims, std::vector<float>(kVoxels, 10.0f + static_cast<float>(volume)));
  }
  return m;
}

// The CNR map of the design's contrast, as the server sends it with a tSNR map: signed, NaN outside the GLM's voxels
// (here voxel 0), voxel 59 = -(volume).
void add_cnr(Message& m, int64_t volume) {
  std::vector<float> cnr(kVoxels, 0.5f);
  cnr[0] = std::nanf("");
  cnr[59] = -static_cast<float>(volume);
  m.add_frame("qa_cnr", kDims, std::move(cnr));
}

TrUpdate decode(const Message& m) {
  auto r = decode_result_message(m.header.dump(), m.frames());
  if (auto* e = std::get_if<DecodeError>(&r)) {
    ADD_FAILURE() << e->reason;
    return {};
  }
  return std::get<TrUpdate>(std::move(r));
}

std::string refusal(const Message& m) {
  auto r = decode_result_message(m.header.dump(), m.frames());
  return std::holds_alternative<DecodeError>(r) ? std::get<DecodeError>(r).reason : std::string();
}

TEST(QaMessage, EveryFieldAndFrameArrives) {
  Message m = make_message(41);
  m.header["qa_alarm"] = {
      {{"metric", "fd_mm"}, {"volume", 41}, {"value", 0.9}, {"threshold", 0.5}, {"where", ""}},
      {{"metric", "slice_z"}, {"volume", 41}, {"value", -9.1}, {"threshold", 8.0}, {"where", "slice 2"}}};
  const TrUpdate u = decode(m);
  const QaUpdate& q = u.qa;
  ASSERT_TRUE(q.present);
  EXPECT_DOUBLE_EQ(u.sample.dvars, 52.0);
  EXPECT_EQ(q.sample.volume, 41);
  EXPECT_DOUBLE_EQ(q.sample.fd_mm, 0.12);
  EXPECT_DOUBLE_EQ(q.sample.global_signal, 812.3);
  EXPECT_DOUBLE_EQ(q.sample.outlier_fraction, 0.004);
  EXPECT_DOUBLE_EQ(q.sample.quality_index, 0.012);
  EXPECT_DOUBLE_EQ(q.sample.slice_z_worst, -9.1);
  EXPECT_DOUBLE_EQ(q.sample.tsnr_median, 54.2);
  EXPECT_DOUBLE_EQ(q.sample.sliding_tsnr_median, 89.5);
  EXPECT_DOUBLE_EQ(q.sample.cnr_p95, 1.75);
  EXPECT_TRUE(q.cnr.empty());  // no design: no CNR map
  EXPECT_EQ(q.worst_slice, 2);
  EXPECT_EQ(q.flagged_slices, (std::vector<int64_t>{2, 0}));
  ASSERT_EQ(q.usable.size(), 2u);
  EXPECT_DOUBLE_EQ(q.usable[0].fd_threshold_mm, 0.2);
  EXPECT_EQ(q.usable[0].frames, 40);
  EXPECT_DOUBLE_EQ(q.usable[0].minutes, 0.33);
  EXPECT_DOUBLE_EQ(q.usable[0].minutes_to_target, 12.1);
  EXPECT_TRUE(std::isnan(q.usable[1].minutes_to_target));  // null: never at this rate
  EXPECT_DOUBLE_EQ(q.target_minutes, 12.5);
  ASSERT_TRUE(q.has_thresholds);
  EXPECT_DOUBLE_EQ(q.thresholds.fd_mm, 0.5);
  EXPECT_DOUBLE_EQ(q.thresholds.outlier_fraction, 0.05);
  EXPECT_DOUBLE_EQ(q.thresholds.slice_z, 8.0);
  EXPECT_TRUE(std::isnan(q.thresholds.tsnr_min));  // null: no alarm on it
  EXPECT_EQ(q.carpet_rows, 8);
  EXPECT_EQ(q.carpet_split, 4);
  EXPECT_TRUE(q.tsnr_map_in_this_message);
  EXPECT_EQ(q.carpet_column, std::vector<float>(8, 41.0f));
  ASSERT_EQ(q.tsnr.size(), static_cast<size_t>(kVoxels));
  EXPECT_EQ(q.tsnr[59], 51.0f);
  ASSERT_EQ(q.alarms.size(), 2u);
  EXPECT_EQ(q.alarms[0].metric, "fd_mm");
  EXPECT_EQ(q.alarms[0].volume, 41);
  EXPECT_DOUBLE_EQ(q.alarms[0].value, 0.9);
  EXPECT_DOUBLE_EQ(q.alarms[0].threshold, 0.5);
  EXPECT_EQ(q.alarms[1].where, "slice 2");
  EXPECT_EQ(u.volume.size(), static_cast<size_t>(kVoxels));  // the other frames still arrive
}

TEST(QaMessage, MessagesWithoutQaDecodeAndSayQaOff) {
  const TrUpdate u = decode(make_message(3, false));
  EXPECT_FALSE(u.qa.present);
  EXPECT_TRUE(u.qa.alarms.empty());
  EXPECT_TRUE(u.qa.carpet_column.empty());
  Message nulls = make_message(4, false);
  nulls.header["qa"] = nullptr;
  nulls.header["qa_alarm"] = nullptr;
  EXPECT_FALSE(decode(nulls).qa.present);
  ViewerData d;
  d.apply(decode(make_message(0, false)));
  d.apply(decode(make_message(1, false)));
  EXPECT_FALSE(d.qa.seen);
  EXPECT_FALSE(d.qa.on);
  EXPECT_TRUE(d.qa.samples.empty());
  EXPECT_EQ(d.history.size(), 2u);
  EXPECT_DOUBLE_EQ(d.history[1].dvars, 12.0);  // the top-level DVARS is kept without QA too
  // Only the fields the panel needs: everything else absent is "not known", not an error.
  Message sparse = make_message(2, false);
  sparse.header["qa"] = {{"fd_mm", 0.3}};
  const TrUpdate s = decode(sparse);
  ASSERT_TRUE(s.qa.present);
  EXPECT_EQ(s.qa.sample.volume, 2);  // the message's volume
  EXPECT_TRUE(std::isnan(s.qa.sample.global_signal));
  EXPECT_EQ(s.qa.carpet_rows, -1);
  EXPECT_FALSE(s.qa.has_thresholds);
  d.apply(decode(sparse));
  EXPECT_TRUE(d.qa.seen && d.qa.on);
  d.apply(decode(make_message(3, false)));  // QA went away mid-run: the panel says so, keeps what it had
  EXPECT_TRUE(d.qa.seen);
  EXPECT_FALSE(d.qa.on);
  EXPECT_EQ(d.qa.samples.size(), 1u);
}

TEST(QaMessage, MalformedQaIsRefusedWithAReason) {
  const Message good = make_message(5);
  ASSERT_EQ(refusal(good), "");
  // Header fields of the wrong type, one at a time.
  const std::vector<std::pair<nlohmann::json::json_pointer, nlohmann::json>> bad_fields{
      {"/qa"_json_pointer, 7},
      {"/qa"_json_pointer, nlohmann::json::array()},
      {"/qa/volume"_json_pointer, 4.5},
      {"/qa/volume"_json_pointer, -1},
      {"/qa/fd_mm"_json_pointer, "0.1"},
      {"/qa/global_signal"_json_pointer, true},
      {"/qa/outlier_fraction"_json_pointer, nlohmann::json::array()},
      {"/qa/quality_index"_json_pointer, nlohmann::json::object()},
      {"/qa/slice_z_worst"_json_pointer, "high"},
      {"/qa/worst_slice"_json_pointer, "12"},
      {"/qa/worst_slice"_json_pointer, 1.5},
      {"/qa/flagged_slices"_json_pointer, 12},
      {"/qa/flagged_slices"_json_pointer, {1, "2"}},
      {"/qa/flagged_slices"_json_pointer, {-3}},
      {"/qa/tsnr_median"_json_pointer, "54"},
      {"/qa/sliding_tsnr_median"_json_pointer, "48"},
      {"/qa/sliding_tsnr_median"_json_pointer, nlohmann::json::array()},
      {"/qa/cnr_p95"_json_pointer, true},
      {"/qa/cnr_p95"_json_pointer, nlohmann::json::object()},
      {"/qa/usable"_json_pointer, nlohmann::json::object()},
      {"/qa/usable/0"_json_pointer, 0.2},
      {"/qa/usable/0/frames"_json_pointer, -1},
      {"/qa/usable/0/frames"_json_pointer, 2.5},
      {"/qa/usable/1/minutes"_json_pointer, "0.3"},
      {"/qa/usable/1/minutes_to_target"_json_pointer, "never"},
      {"/qa/target_minutes"_json_pointer, "12"},
      {"/qa/thresholds"_json_pointer, 0.5},
      {"/qa/thresholds/fd_mm"_json_pointer, "0.5"},
      {"/qa/thresholds/tsnr_min"_json_pointer, false},
      {"/qa/carpet_rows"_json_pointer, "8"},
      {"/qa/carpet_rows"_json_pointer, -8},
      {"/qa/carpet_split"_json_pointer, 9},  // beyond carpet_rows
      {"/qa/carpet_split"_json_pointer, -1},
      {"/qa/tsnr_map_in_this_message"_json_pointer, 1},
      {"/qa_alarm"_json_pointer, nlohmann::json::object()},
      {"/qa_alarm"_json_pointer, {1}},
      {"/qa_alarm"_json_pointer, {{{"volume", 5}}}},  // no metric
      {"/qa_alarm"_json_pointer, {{{"metric", 3}}}},
      {"/qa_alarm"_json_pointer, {{{"metric", "fd_mm"}, {"value", "0.9"}}}},
      {"/qa_alarm"_json_pointer, {{{"metric", "fd_mm"}, {"volume", "5"}}}},
      {"/qa_alarm"_json_pointer, {{{"metric", "fd_mm"}, {"where", 12}}}},
  };
  for (const auto& [pointer, value] : bad_fields) {
    Message m = good;
    m.header[pointer] = value;
    if (pointer.to_string() == "/qa") {  // the carpet frame then has no header to check it against
      EXPECT_NE(refusal(m), "") << pointer.to_string();
      continue;
    }
    EXPECT_NE(refusal(m), "") << pointer.to_string() << " = " << value.dump();
  }
  // Carpet frames that disagree with carpet_rows: longer, shorter, two-dimensional, without a qa header.
  for (int64_t rows : {9, 7}) {
    Message m = good;
    m.data[1].assign(static_cast<size_t>(rows), 1.0f);
    m.header["frames"][1]["shape"] = {rows};
    m.header["frames"][1]["bytes"] = rows * 4;
    EXPECT_NE(refusal(m).find("qa_carpet"), std::string::npos) << rows;
  }
  Message flat = good;
  flat.header["frames"][1]["shape"] = {2, 4};
  EXPECT_NE(refusal(flat).find("qa_carpet"), std::string::npos);
  Message orphan = make_message(5, false);
  orphan.add_frame("qa_carpet", {8}, std::vector<float>(8, 0.0f));
  EXPECT_NE(refusal(orphan).find("qa_carpet"), std::string::npos);
  Message short_frame = good;  // the bytes do not match the listed shape
  short_frame.data[1].pop_back();
  EXPECT_NE(refusal(short_frame), "");
  // tSNR maps of the wrong shape: flattened, axes swapped, too few values.
  for (const nlohmann::json& shape : {nlohmann::json{60}, nlohmann::json{4, 5, 3}, nlohmann::json{5, 4, 2}}) {
    Message m = good;
    int64_t n = 1;
    for (const auto& s : shape) n *= s.get<int64_t>();
    m.data[2].assign(static_cast<size_t>(n), 1.0f);
    m.header["frames"][2]["shape"] = shape;
    m.header["frames"][2]["bytes"] = n * 4;
    EXPECT_NE(refusal(m).find("qa_tsnr"), std::string::npos) << shape.dump();
  }
  Message no_dims = good;  // a tSNR map needs the grid
  no_dims.header.erase("dims");
  no_dims.header["frames"].erase(0);
  no_dims.data.erase(no_dims.data.begin());
  EXPECT_NE(refusal(no_dims), "");
}

TEST(QaMessage, FramesThisViewerDoesNotKnowAreSkippedWhateverTheirShape) {
  Message m = make_message(8);
  m.add_frame("qa_future_trace", {3}, {1.0f, 2.0f, 3.0f});
  m.add_frame("some_matrix", {2, 5}, std::vector<float>(10, 0.0f));
  const TrUpdate u = decode(m);
  EXPECT_EQ(u.qa.carpet_column.size(), 8u);
  EXPECT_EQ(u.volume.size(), static_cast<size_t>(kVoxels));
  m.header["frames"][3]["shape"] = {4};  // but it must still match its own bytes
  EXPECT_NE(refusal(m), "");
}

TEST(QaMessage, CnrMapSlidingTsnrMedianAndCnrP95Arrive) {
  Message m = make_message(12);
  add_cnr(m, 12);
  const TrUpdate u = decode(m);
  const QaUpdate& q = u.qa;
  ASSERT_EQ(q.cnr.size(), static_cast<size_t>(kVoxels));
  EXPECT_TRUE(std::isnan(q.cnr[0]));  // outside the GLM's voxels
  EXPECT_EQ(q.cnr[1], 0.5f);
  EXPECT_EQ(q.cnr[59], -12.0f);  // signed
  EXPECT_EQ(q.tsnr[59], 22.0f);  // the tSNR map beside it, unchanged
  EXPECT_DOUBLE_EQ(q.sample.sliding_tsnr_median, 60.5);
  EXPECT_DOUBLE_EQ(q.sample.cnr_p95, 1.75);
  // null or absent: not known (a run without a GLM or without a design).
  Message nulls = make_message(1);
  nulls.header["qa"].erase("cnr_p95");
  const TrUpdate n = decode(nulls);
  EXPECT_TRUE(std::isnan(n.qa.sample.sliding_tsnr_median));  // null before volume 3
  EXPECT_TRUE(std::isnan(n.qa.sample.cnr_p95));
  // The CNR map is a map of the grid on its own: it decodes without a tSNR map in the message too.
  Message alone = make_message(13, true, false);
  add_cnr(alone, 13);
  EXPECT_EQ(decode(alone).qa.cnr.size(), static_cast<size_t>(kVoxels));
}

TEST(QaMessage, MalformedCnrFramesAreRefusedWithAReason) {
  Message good = make_message(5);
  add_cnr(good, 5);
  ASSERT_EQ(refusal(good), "");
  const size_t k = good.data.size() - 1;  // the qa_cnr frame
  // Flattened, axes swapped, too few slices, two-dimensional, four-dimensional.
  for (const nlohmann::json& shape : {nlohmann::json{60}, nlohmann::json{4, 5, 3}, nlohmann::json{5, 4, 2},
                                      nlohmann::json{20, 3}, nlohmann::json{5, 4, 3, 1}}) {
    Message m = good;
    int64_t n = 1;
    for (const auto& v : shape) n *= v.get<int64_t>();
    m.data[k].assign(static_cast<size_t>(n), 1.0f);
    m.header["frames"][k]["shape"] = shape;
    m.header["frames"][k]["bytes"] = n * 4;
    const std::string why = refusal(m);
    EXPECT_NE(why.find("qa_cnr"), std::string::npos) << shape.dump() << ": " << why;
  }
  Message short_frame = good;  // fewer bytes than its listed shape
  short_frame.data[k].pop_back();
  EXPECT_NE(refusal(short_frame).find("qa_cnr"), std::string::npos);
  Message not_float = good;
  not_float.header["frames"][k]["dtype"] = "float64";
  EXPECT_NE(refusal(not_float).find("qa_cnr"), std::string::npos);
  Message bad_size = good;  // a shape entry that is not an integer
  bad_size.header["frames"][k]["shape"] = {5, "4", 3};
  EXPECT_NE(refusal(bad_size), "");
  Message no_dims = good;  // a CNR map needs the grid
  no_dims.header.erase("dims");
  no_dims.header["frames"].erase(0);
  no_dims.data.erase(no_dims.data.begin());
  no_dims.header["frames"].erase(1);  // and the tSNR map, refused for the same reason
  no_dims.data.erase(no_dims.data.begin() + 1);
  EXPECT_NE(refusal(no_dims).find("qa_cnr"), std::string::npos) << refusal(no_dims);
}

TEST(QaMessage, RandomMutationsNeverCrash) {
  std::mt19937 rng(11);
  Message good = make_message(6);
  add_cnr(good, 6);
  good.header["qa_alarm"] = {{{"metric", "outlier_fraction"}, {"volume", 6}, {"value", 0.09}, {"threshold", 0.05}}};
  const std::string text = good.header.dump();
  int refused = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string mutated = text;
    // Mutations inside the qa part most of the time.
    const size_t from = i % 4 == 0 ? 0 : text.find("\"qa");
    for (int k = 0; k < 3; ++k) mutated[from + rng() % (mutated.size() - from)] = static_cast<char>(rng() % 256);
    auto frames = good.frames();
    std::vector<std::byte> blob(rng() % 64);
    if (i % 3 == 0) frames[1 + rng() % 3] = std::span<const std::byte>(blob);
    auto r = decode_result_message(mutated, frames);
    if (std::holds_alternative<DecodeError>(r)) {
      ++refused;
      continue;
    }
    ViewerData d;  // whatever decodes must also merge
    d.apply(std::get<TrUpdate>(std::move(r)));
  }
  EXPECT_GT(refused, 500);
}

TEST(QaState, TracesKeepNullsAsGapsAndTheNewestValues) {
  ViewerData d;
  for (int64_t v = 0; v < 4; ++v) d.apply(decode(make_message(v)));
  const QaState& qa = d.qa;
  ASSERT_TRUE(qa.seen && qa.on);
  ASSERT_EQ(qa.samples.size(), 4u);
  EXPECT_TRUE(std::isnan(qa.samples[0].fd_mm));  // null for volume 0
  EXPECT_DOUBLE_EQ(qa.samples[1].fd_mm, 0.12);
  EXPECT_TRUE(std::isnan(qa.samples[1].outlier_fraction));  // null early on
  EXPECT_DOUBLE_EQ(qa.samples[3].outlier_fraction, 0.004);
  EXPECT_DOUBLE_EQ(qa.samples[2].dvars, 13.0);  // the header's top-level dvars
  EXPECT_EQ(qa.samples[3].volume, 3);
  EXPECT_EQ(qa.latest.volume, 3);
  EXPECT_DOUBLE_EQ(qa.thresholds.fd_mm, 0.5);
  EXPECT_TRUE(std::isnan(qa.thresholds.tsnr_min));
  ASSERT_EQ(qa.usable.size(), 2u);
  EXPECT_DOUBLE_EQ(qa.target_minutes, 12.5);
  // Flagged slices: (volume, slice, z), z known for the volume's worst slice only.
  ASSERT_EQ(qa.flagged.size(), 8u);
  EXPECT_EQ(qa.flagged[6].volume, 3);
  EXPECT_EQ(qa.flagged[6].slice, 2);
  EXPECT_DOUBLE_EQ(qa.flagged[6].z, -9.1);
  EXPECT_EQ(qa.flagged[7].slice, 0);
  EXPECT_TRUE(std::isnan(qa.flagged[7].z));
  EXPECT_EQ(qa.flagged_now, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(qa.worst_slice, 2);
  // A null DVARS stays a gap.
  Message m = make_message(4);
  m.header["dvars"] = nullptr;
  d.apply(decode(m));
  EXPECT_TRUE(std::isnan(d.qa.samples.back().dvars));
}

TEST(QaState, AMessageRepeatingThePreviousVolumesQaAddsNothing) {
  ViewerData d;
  Message first = make_message(5, true, false);
  first.header["qa_alarm"] = {{{"metric", "fd_mm"}, {"volume", 5}, {"value", 0.9}, {"threshold", 0.5}, {"where", ""}}};
  d.apply(decode(first));
  // Volume 6 whose QA failed: the server sends volume 5's qa again (without the PUB-only fields) and its alarm.
  Message repeat = make_message(6, false);
  repeat.header["qa"] = qa_object(5);
  for (const char* key : {"thresholds", "carpet_rows", "carpet_split", "tsnr_map_in_this_message"}) {
    repeat.header["qa"].erase(key);
  }
  repeat.header["qa_alarm"] = first.header["qa_alarm"];
  d.apply(decode(repeat));
  EXPECT_EQ(d.history.size(), 2u);
  EXPECT_TRUE(d.qa.on);
  EXPECT_EQ(d.qa.samples.size(), 1u);
  EXPECT_EQ(d.qa.flagged.size(), 2u);
  EXPECT_EQ(d.qa.carpet.columns(), 1u);
  EXPECT_EQ(d.qa.alarms.size(), 1u);
  EXPECT_EQ(d.qa.alarms_seen, 1);
  EXPECT_DOUBLE_EQ(d.qa.thresholds.fd_mm, 0.5);  // kept from the message that had them
  // qa.dvars stands in when the header has no top-level dvars.
  Message own = make_message(7, true, false);
  own.header.erase("dvars");
  own.header["qa"]["dvars"] = 3.5;
  d.apply(decode(own));
  EXPECT_DOUBLE_EQ(d.qa.samples.back().dvars, 3.5);
}

TEST(QaState, TheTsnrMapIsKeptUntilTheNextOneAndClearedByANewRun) {
  ViewerData d;
  d.apply(decode(make_message(0, true, true)));
  d.apply(decode(make_message(1, true, false)));
  d.apply(decode(make_message(2, true, false)));
  ASSERT_EQ(d.qa.tsnr.size(), static_cast<size_t>(kVoxels));
  EXPECT_EQ(d.qa.tsnr[0], 10.0f);
  EXPECT_EQ(d.qa.tsnr_volume, 0);
  EXPECT_EQ(d.qa.tsnr_version, 1u);
  d.apply(decode(make_message(3, true, true)));
  EXPECT_EQ(d.qa.tsnr[0], 13.0f);
  EXPECT_EQ(d.qa.tsnr_version, 2u);
  d.apply(decode(make_message(0, true, false, 8, "run-02")));
  EXPECT_TRUE(d.qa.tsnr.empty());
  EXPECT_EQ(d.qa.tsnr_volume, -1);
}

TEST(QaState, TheCnrMapAndTheSlidingMedianAreKeptPerRun) {
  ViewerData d;
  for (int64_t v = 0; v < 6; ++v) {
    Message m = make_message(v, true, v % 4 == 0);
    if (v % 4 == 0) add_cnr(m, v);
    d.apply(decode(m));
  }
  const QaState& qa = d.qa;
  ASSERT_EQ(qa.cnr.size(), static_cast<size_t>(kVoxels));
  EXPECT_EQ(qa.cnr[59], -4.0f);  // volume 4's map, kept through volume 5
  EXPECT_EQ(qa.cnr_volume, 4);
  EXPECT_EQ(qa.cnr_version, 2u);
  EXPECT_EQ(qa.tsnr_version, 2u);
  ASSERT_EQ(qa.samples.size(), 6u);
  EXPECT_TRUE(std::isnan(qa.samples[2].sliding_tsnr_median));  // a gap in the trace
  EXPECT_DOUBLE_EQ(qa.samples[3].sliding_tsnr_median, 51.5);
  EXPECT_DOUBLE_EQ(qa.latest.sliding_tsnr_median, 53.5);
  EXPECT_DOUBLE_EQ(qa.latest.cnr_p95, 1.75);
  // A message repeating the previous volume's QA adds no sample, and keeps the maps.
  Message repeat = make_message(6, false);
  repeat.header["qa"] = qa_object(5);
  d.apply(decode(repeat));
  EXPECT_EQ(d.qa.samples.size(), 6u);
  EXPECT_EQ(d.qa.cnr_volume, 4);
  // A new run starts without a CNR map (a run without a design never gets one).
  d.apply(decode(make_message(0, true, true, 8, "run-02")));
  EXPECT_TRUE(d.qa.cnr.empty());
  EXPECT_EQ(d.qa.cnr_volume, -1);
  EXPECT_EQ(d.qa.cnr_version, 0u);
  EXPECT_EQ(d.qa.tsnr_version, 1u);
}

TEST(QaCarpet, RingKeepsTheNewestColumnsOldestFirst) {
  QaCarpet c(4);
  c.restart(3, 1);
  EXPECT_EQ(c.columns(), 0u);
  EXPECT_TRUE(c.column(0).empty());
  for (int64_t v = 0; v < 6; ++v) {
    const std::vector<float> column{static_cast<float>(v), static_cast<float>(v) + 0.5f, -static_cast<float>(v)};
    c.append(v, column);
  }
  ASSERT_EQ(c.columns(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(c.column_volume(k), static_cast<int64_t>(k) + 2);
    ASSERT_EQ(c.column(k).size(), 3u);
    EXPECT_EQ(c.column(k)[1], static_cast<float>(k + 2) + 0.5f);
  }
  EXPECT_EQ(c.column_volume(4), -1);
  EXPECT_EQ(c.split(), 1);
  EXPECT_EQ(c.restarts(), 0);
  c.append(6, std::vector<float>{});  // no column: nothing changes
  EXPECT_EQ(c.columns(), 4u);
  c.append(7, std::vector<float>(5, 0.0f));  // another length: starts over with it
  EXPECT_EQ(c.rows(), 5);
  EXPECT_EQ(c.columns(), 1u);
  EXPECT_EQ(c.column_volume(0), 7);
  EXPECT_EQ(c.restarts(), 1);
}

TEST(QaState, CarpetRestartsForANewRunOrNewCarpetRowsAndHoldsAtMost600Columns) {
  ViewerData d;
  for (int64_t v = 0; v < 605; ++v) d.apply(decode(make_message(v, true, false)));
  const QaCarpet& c = d.qa.carpet;
  EXPECT_EQ(c.capacity(), 600u);
  ASSERT_EQ(c.columns(), 600u);
  EXPECT_EQ(c.rows(), 8);
  EXPECT_EQ(c.split(), 4);
  EXPECT_EQ(c.column_volume(0), 5);
  EXPECT_EQ(c.column(0)[0], 5.0f);
  EXPECT_EQ(c.column_volume(599), 604);
  EXPECT_EQ(c.column(599)[7], 604.0f);
  // Another carpet_rows in the same run: the old columns are dropped.
  d.apply(decode(make_message(605, true, false, 6)));
  EXPECT_EQ(d.qa.carpet.rows(), 6);
  EXPECT_EQ(d.qa.carpet.split(), 3);
  ASSERT_EQ(d.qa.carpet.columns(), 1u);
  EXPECT_EQ(d.qa.carpet.column_volume(0), 605);
  d.apply(decode(make_message(606, true, false, 6)));
  EXPECT_EQ(d.qa.carpet.columns(), 2u);
  // A message with QA but without carpet_rows or a column leaves the carpet alone.
  Message header_only = make_message(607, false);
  header_only.header["qa"] = {{"fd_mm", 0.1}};
  d.apply(decode(header_only));
  EXPECT_EQ(d.qa.carpet.columns(), 2u);
  // A new run starts an empty carpet, and everything else of the QA with it.
  d.apply(decode(make_message(0, true, false, 6, "run-02")));
  EXPECT_EQ(d.qa.carpet.columns(), 1u);
  EXPECT_EQ(d.qa.carpet.column_volume(0), 0);
  EXPECT_EQ(d.qa.samples.size(), 1u);
  EXPECT_EQ(d.qa.flagged.size(), 2u);
  d.apply(decode(make_message(0, false, false, 6, "run-03")));
  EXPECT_EQ(d.qa.carpet.columns(), 0u);
  EXPECT_FALSE(d.qa.seen);
}

TEST(QaState, AlarmsNewestFirstAtMost50) {
  ViewerData d;
  auto with_alarms = [](int64_t v, int count) {
    Message m = make_message(v, true, false);
    for (int k = 0; k < count; ++k) {
      m.header["qa_alarm"].push_back({{"metric", k == 0 ? "fd_mm" : "slice_z"},
                                      {"volume", v},
                                      {"value", static_cast<double>(k)},
                                      {"threshold", 0.5},
                                      {"where", k == 0 ? "" : "slice " + std::to_string(k)}});
    }
    return m;
  };
  d.apply(decode(with_alarms(0, 1)));
  d.apply(decode(make_message(1, true, false)));  // no alarm: the list stays
  d.apply(decode(with_alarms(2, 2)));
  ASSERT_EQ(d.qa.alarms.size(), 3u);
  EXPECT_EQ(d.qa.alarms[0].volume, 2);  // the newest message first, its alarms in the order sent
  EXPECT_EQ(d.qa.alarms[0].metric, "fd_mm");
  EXPECT_EQ(d.qa.alarms[1].where, "slice 1");
  EXPECT_EQ(d.qa.alarms[2].volume, 0);
  for (int64_t v = 3; v < 40; ++v) d.apply(decode(with_alarms(v, 2)));
  ASSERT_EQ(d.qa.alarms.size(), kQaMaxAlarms);
  EXPECT_EQ(d.qa.alarms_seen, 1 + 2 + 37 * 2);
  EXPECT_EQ(d.qa.alarms.front().volume, 39);
  EXPECT_EQ(d.qa.alarms.back().volume, 15);  // 25 messages of 2
  for (size_t k = 1; k < d.qa.alarms.size(); ++k) EXPECT_GE(d.qa.alarms[k - 1].volume, d.qa.alarms[k].volume);
  d.apply(decode(with_alarms(40, 60)));  // more than fit in one message: its first 50
  ASSERT_EQ(d.qa.alarms.size(), kQaMaxAlarms);
  EXPECT_EQ(d.qa.alarms.front().volume, 40);
  EXPECT_EQ(d.qa.alarms.back().where, "slice 49");
  // Alarms without a qa object (a server that sends only them) are still listed.
  Message bare = make_message(41, false);
  bare.header["qa_alarm"] = {{{"metric", "usable_minutes"}, {"volume", 41}, {"value", 3.0}, {"threshold", 12.5}}};
  d.apply(decode(bare));
  EXPECT_EQ(d.qa.alarms.front().metric, "usable_minutes");
  d.apply(decode(make_message(0, true, false, 8, "run-02")));
  EXPECT_TRUE(d.qa.alarms.empty());
  EXPECT_EQ(d.qa.alarms_seen, 0);
}

TEST(QaState, SharedDataCopiesTheQaToTheUi) {
  SharedViewerData shared;
  for (int64_t v = 0; v < 3; ++v) {
    Message m = make_message(v);
    add_cnr(m, v);
    shared.apply(decode(m));
  }
  ViewerData copy;
  ASSERT_TRUE(shared.refresh(copy));
  EXPECT_EQ(copy.qa.samples.size(), 3u);
  EXPECT_EQ(copy.qa.carpet.columns(), 3u);
  EXPECT_EQ(copy.qa.carpet.column(2)[0], 2.0f);
  EXPECT_EQ(copy.qa.tsnr.size(), static_cast<size_t>(kVoxels));
  ASSERT_EQ(copy.qa.cnr.size(), static_cast<size_t>(kVoxels));
  EXPECT_EQ(copy.qa.cnr[59], -2.0f);
  EXPECT_DOUBLE_EQ(copy.qa.latest.cnr_p95, 1.75);
}

TEST(QaText, UsableTallyAndAlarmLines) {
  QaUsable row{0.2, 40, 0.33, 12.1};
  EXPECT_EQ(usable_line(row, 12.5), "0.2 mm: 40 frames, 0.33 min - 12.1 more min to reach 12.5 min");
  row.minutes_to_target = kQaNaN;
  EXPECT_EQ(usable_line(row, 12.5), "0.2 mm: 40 frames, 0.33 min - never at this rate");
  row = {0.5, 1600, 13.33, 0.0};
  EXPECT_EQ(usable_line(row, 12.5), "0.5 mm: 1600 frames, 13.33 min - reached 12.5 min");
  row.minutes_to_target = kQaNaN;  // reached, whatever the prediction says
  EXPECT_EQ(usable_line(row, 12.5), "0.5 mm: 1600 frames, 13.33 min - reached 12.5 min");
  EXPECT_EQ(usable_line(row, kQaNaN), "0.5 mm: 1600 frames, 13.33 min");
  EXPECT_EQ(alarm_line({"fd_mm", 41, 0.9, 0.5, ""}), "volume 41  fd_mm 0.9 (threshold 0.5)");
  EXPECT_EQ(alarm_line({"slice_z", 41, -9.1, 8.0, "slice 12"}), "volume 41  slice_z -9.1 (threshold 8)  slice 12");
  EXPECT_EQ(alarm_line({"tsnr_min", 7, kQaNaN, kQaNaN, ""}), "volume 7  tsnr_min n/a");
}

TEST(QaImages, CarpetIsGreyOverPlusMinusTwoSdOldestColumnLeft) {
  QaCarpet c(3);
  c.restart(4, 2);
  c.append(10, std::vector<float>{-2.0f, 0.0f, 2.0f, std::nanf("")});
  c.append(11, std::vector<float>{-5.0f, 1.0f, 5.0f, -1.0f});
  const SliceImage img = carpet_image(c);
  ASSERT_EQ(img.width, 2);
  ASSERT_EQ(img.height, 4);
  auto px = [&](int x, int y) {
    const uint8_t* p = &img.rgba[(static_cast<size_t>(y) * 2 + static_cast<size_t>(x)) * 4];
    return std::array<uint8_t, 4>{p[0], p[1], p[2], p[3]};
  };
  EXPECT_EQ(px(0, 0), (std::array<uint8_t, 4>{0, 0, 0, 255}));        // -2 SD: black
  EXPECT_EQ(px(0, 1), (std::array<uint8_t, 4>{128, 128, 128, 255}));  // 0: mid grey
  EXPECT_EQ(px(0, 2), (std::array<uint8_t, 4>{255, 255, 255, 255}));  // +2 SD: white
  EXPECT_GT(px(0, 3)[2], px(0, 3)[0] + 30);                           // NaN: dark blue, not grey
  EXPECT_EQ(px(1, 0)[0], 0);                                          // clipped
  EXPECT_EQ(px(1, 2)[0], 255);
  EXPECT_EQ(px(1, 1)[0], 191);  // +1 SD
  EXPECT_EQ(carpet_split_row(c), 2);
  // More rows than shown: rows picked evenly, the split scaled.
  QaCarpet tall(2);
  tall.restart(100, 30);
  std::vector<float> ramp(100);
  for (size_t r = 0; r < 100; ++r) ramp[r] = -2.0f + 4.0f * static_cast<float>(r) / 99.0f;
  tall.append(0, ramp);
  const SliceImage small = carpet_image(tall, 10);
  ASSERT_EQ(small.height, 10);
  for (int y = 1; y < 10; ++y) EXPECT_GT(small.rgba[static_cast<size_t>(y) * 4], small.rgba[(y - 1) * 4u]);
  EXPECT_EQ(carpet_split_row(tall, 10), 3);
  EXPECT_EQ(carpet_image(QaCarpet{}).width, 0);
}

TEST(QaImages, TsnrMosaicTilesEveryAxialSlice) {
  const std::array<int64_t, 3> dims{5, 4, 7};
  const MosaicLayout m = mosaic_layout(dims);
  EXPECT_EQ(m.columns, 3);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(mosaic_tile(m, 0), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(mosaic_tile(m, 4), (std::pair<int64_t, int64_t>{5, 4}));
  EXPECT_EQ(mosaic_tile(m, 6), (std::pair<int64_t, int64_t>{0, 8}));
  std::vector<float> volume(140, 100.0f), tsnr(140, 0.0f);
  const int64_t x = 1, y = 3, z = 4;  // one voxel of high tSNR
  tsnr[static_cast<size_t>(x + 5 * (y + 4 * z))] = 50.0f;
  OverlaySettings o;
  o.threshold = 1e-6f;
  o.maximum = 60.0f;
  o.negative = false;
  const SliceImage img = axial_mosaic(volume, tsnr, dims, {2, 2, 2}, {0.0f, 200.0f}, o);
  ASSERT_EQ(img.width, 15);
  ASSERT_EQ(img.height, 12);
  int coloured = 0;
  for (int py = 0; py < img.height; ++py) {
    for (int px = 0; px < img.width; ++px) {
      const uint8_t* p = &img.rgba[(static_cast<size_t>(py) * 15 + static_cast<size_t>(px)) * 4];
      if (p[0] != p[2]) {
        ++coloured;
        EXPECT_EQ(px, 5 + x);
        EXPECT_EQ(py, 4 + (dims[1] - 1 - y));  // +y up within the tile
      }
    }
  }
  EXPECT_EQ(coloured, 1);
  EXPECT_EQ(img.rgba[(11 * 15 + 14) * 4 + 0], 0);  // an unused tile: black
  EXPECT_EQ(img.rgba[(11 * 15 + 14) * 4 + 3], 255);
  EXPECT_EQ(axial_mosaic(volume, tsnr, {0, 0, 0}, {2, 2, 2}, {0.0f, 1.0f}, o).width, 0);
}

TEST(QaImages, CnrMosaicIsSignedAndItsScaleRobust) {
  // The scale: the 99.5th percentile of |CNR| over finite non-zero values, whatever their sign.
  std::vector<float> cnr(1000, 0.0f);
  for (size_t i = 0; i < 990; ++i) cnr[i] = (i % 2 == 0 ? 1.0f : -1.0f) * static_cast<float>(i % 100) / 10.0f;
  cnr[990] = -500.0f;  // one outlier
  cnr[991] = std::nanf("");
  cnr[992] = std::numeric_limits<float>::infinity();
  const float top = robust_abs_max(cnr);
  EXPECT_GE(top, 9.5f);
  EXPECT_LE(top, 9.9f);
  EXPECT_EQ(robust_abs_max(std::vector<float>(10, 0.0f)), 1.0f);  // nothing known: a unit scale
  EXPECT_EQ(robust_abs_max({}), 1.0f);
  EXPECT_EQ(robust_abs_max(std::vector<float>{-3.0f}), 3.0f);
  // A negative voxel in cool colours, a positive one in hot colours, NaN uncoloured.
  const std::array<int64_t, 3> dims{4, 4, 4};
  std::vector<float> volume(64, 100.0f), map(64, std::nanf(""));
  map[1 + 4 * (2 + 4 * 0)] = 3.0f;
  map[2 + 4 * (1 + 4 * 3)] = -3.0f;
  OverlaySettings o;
  o.threshold = std::numeric_limits<float>::min();
  o.maximum = 4.0f;
  const SliceImage img = axial_mosaic(volume, map, dims, {2, 2, 2}, {0.0f, 200.0f}, o);
  ASSERT_EQ(img.width, 8);
  ASSERT_EQ(img.height, 8);
  int hot = 0, cool = 0;
  for (int py = 0; py < img.height; ++py) {
    for (int px = 0; px < img.width; ++px) {
      const uint8_t* p = &img.rgba[(static_cast<size_t>(py) * 8 + static_cast<size_t>(px)) * 4];
      if (p[0] > p[2] + 60) {
        ++hot;
        EXPECT_EQ(px, 1);  // slice 0: tile (0, 0)
        EXPECT_EQ(py, 3 - 2);
      } else if (p[2] > p[0] + 60) {
        ++cool;
        EXPECT_EQ(px, 4 + 2);  // slice 3: tile (4, 4)
        EXPECT_EQ(py, 4 + 3 - 1);
      }
    }
  }
  EXPECT_EQ(hot, 1);
  EXPECT_EQ(cool, 1);
}

}  // namespace
}  // namespace rtf::viewer
