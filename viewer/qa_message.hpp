// Decoding the QA part of a results message (docs/protocol.md §8): the header's `qa` object and `qa_alarm` array, and
// the checks of the `qa_tsnr`, `qa_cnr` and `qa_carpet` frames against the header. Used by decode_result_message.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "viewer/qa_data.hpp"

namespace rtf::viewer {

// Fills `out` from the header's `qa` and `qa_alarm` (absent: out.present false, no alarms); `message_volume` is the
// header's `volume`. A field of the wrong type (absent and null are fine) gives the reason.
std::optional<std::string> decode_qa_header(const nlohmann::json& header, int64_t message_volume, QaUpdate& out);

// Takes frame `qa_tsnr`, `qa_cnr` or `qa_carpet` (`shape` as listed, `data` its values) into `out` after checking it
// against the header (`dims` for the maps, qa.carpet_rows for the carpet); the reason when it does not match.
std::optional<std::string> take_qa_frame(const std::string& name, const nlohmann::json& shape,
                                         std::array<int64_t, 3> dims, std::vector<float>&& data, QaUpdate& out);

}  // namespace rtf::viewer
