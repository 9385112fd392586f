// fork + execve with stdout/stderr redirected to the log and the MPI launcher's variables removed.
#include "core/scale/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace rtf {

namespace {

bool is_launcher_variable(const char* entry) {
  for (const char* prefix : {"OMPI_", "PMIX_", "PMI_", "OPAL_", "HYDRA_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}) {
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

}  // namespace

std::string this_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
  return path.string();
}

int run_child_process(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  if (argv.empty()) throw std::invalid_argument("run_child_process: no program");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!is_launcher_variable(*e)) env.push_back(*e);
  }
  env.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(fmt::format("{}: cannot create the log: {}", log.string(), std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(errno)));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until execve
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("waiting for {}: {}", argv[0], std::strerror(errno)));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace rtf
