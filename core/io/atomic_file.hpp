// Writing a small text file so that it never exists half-written: the text goes to "<path>.partial" beside it, which
// is written and fsynced (every write and the close checked), renamed over `path`, and the folder fsynced. A failed
// write removes the .partial file; an interrupted run leaves at most the .partial file. Several files that must appear
// together: core/io/output_set.hpp.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace rtf {

// Throws std::runtime_error "FILE: OPERATION failed: <the system's reason>" when it cannot be written (`path` is then
// as it was).
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

// The same for a file made of several parts written one after another (no copy of a large payload).
void write_parts_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts);

}  // namespace rtf
