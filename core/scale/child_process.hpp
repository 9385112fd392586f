// Running a program as a child process (`rtfmri batch` runs each subject's command this way): its output and errors
// go to a log file; MPI's environment variables are left out so that the child is never taken for a rank.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rtf {

// Runs argv[0] (a path) with the arguments and waits. Returns its exit status (128 + N when signal N ended it).
// Throws std::runtime_error when it cannot be started.
int run_child_process(const std::vector<std::string>& argv, const std::filesystem::path& log);

// The running executable's path (/proc/self/exe).
std::string this_executable();

}  // namespace rtf
