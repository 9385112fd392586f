// Writing a small text file so that it never exists half-written: the text goes to "<path>.partial" beside it, which
// is flushed and then renamed over `path`. An interrupted run leaves at most the .partial file.
#pragma once

#include <filesystem>
#include <string_view>

namespace rtf {

// Throws std::runtime_error naming the file when it cannot be written.
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace rtf
