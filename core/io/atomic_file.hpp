// Writing a small text file so that it never exists half-written: the text goes to "<path>.partial" beside it, which
// is flushed and then renamed over `path`. An interrupted run leaves at most the .partial file.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace rtf {

// Throws std::runtime_error naming the file when it cannot be written.
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

// The same for a file made of several parts written one after another (no copy of a large payload).
void write_parts_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts);

}  // namespace rtf
