// The signal handler and its lock-free state: a table of registered folders (atomic pointers: whoever exchanges one
// to null owns it, so the handler never reads a freed string) and one state word (> 0: commits renaming, -1: the
// process is ending on a signal), with the held signal beside it.
#include "core/io/output_signals.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rtf::io::output_signals {

namespace {

constexpr std::array kSignals{SIGINT, SIGTERM, SIGHUP};
constexpr size_t kSlots = 256;

std::array<std::atomic<char*>, kSlots> g_folders{};
std::atomic<int> g_state{0};    // > 0: commits renaming; -1: the process is ending on a signal
std::atomic<int> g_pending{0};  // the signal that arrived (acted on by whoever takes g_state from 0 to -1)
std::array<struct sigaction, kSignals.size()> g_previous{};  // each signal's action before ours (set once, by install)

static_assert(std::atomic<char*>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

// Unlinks every entry of `dir` (flat: OutputSet's folders hold files only) and removes it; async-signal-safe.
void empty_and_remove(const char* dir) {
  for (int pass = 0; pass < 3; ++pass) {  // again if a file appeared meanwhile (another thread still writing)
    const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    alignas(8) char buffer[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
        uint16_t length = 0;
        std::memcpy(&length, buffer + at + 16, sizeof length);
        const char* name = buffer + at + 19;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ::unlinkat(fd, name, 0);
        at += length;
      }
    }
    ::close(fd);
    if (::rmdir(dir) == 0 || errno == ENOENT) return;
  }
}

// Removes every registered folder, then hands `sig` to the action that was there before ours (the default one, or a
// library's handler such as LLVM's, loaded by PoCL, which cleans up and ends the process the same way);
// async-signal-safe.
[[noreturn]] void end_process(int sig) {
  for (std::atomic<char*>& slot : g_folders) {
    if (char* dir = slot.exchange(nullptr)) empty_and_remove(dir);  // never freed: the process ends
  }
  bool restored = false;
  for (size_t k = 0; k < kSignals.size(); ++k) {
    if (kSignals[k] == sig) restored = ::sigaction(sig, &g_previous[k], nullptr) == 0;
  }
  if (!restored) ::signal(sig, SIG_DFL);
  sigset_t set;
  ::sigemptyset(&set);
  ::sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::signal(sig, SIG_DFL);  // a previous handler that returned: the default action after all
  ::raise(sig);
  ::_exit(128 + sig);  // not reached: the default action of these signals ends the process
}

void on_signal(int sig) {
  const int saved_errno = errno;
  g_pending.store(sig);  // before reading the state: a commit ending now sees it (nothing is lost)
  int state = g_state.load();
  for (;;) {
    if (state != 0) {  // renaming: the last CommitGuard acts on it; or already ending
      errno = saved_errno;
      return;
    }
    if (g_state.compare_exchange_weak(state, -1)) end_process(sig);
  }
}

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t k = 0; k < kSignals.size(); ++k) {
      const int sig = kSignals[k];
      struct sigaction& previous = g_previous[k];
      // Ignored (a background job of a shell, nohup): left so. A handler already there (LLVM's, installed by PoCL
      // when it loads) is chained: ours runs first and hands the signal on to it (end_process).
      if (::sigaction(sig, nullptr, &previous) != 0 || previous.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = on_signal;
      action.sa_flags = SA_RESTART;
      ::sigemptyset(&action.sa_mask);
      for (const int other : kSignals) ::sigaddset(&action.sa_mask, other);
      ::sigaction(sig, &action, nullptr);
    }
  });
}

int register_folder(const std::filesystem::path& dir) {
  char* copy = ::strdup(std::filesystem::absolute(dir).c_str());
  if (copy == nullptr) return -1;
  for (size_t k = 0; k < kSlots; ++k) {
    char* expected = nullptr;
    if (g_folders[k].compare_exchange_strong(expected, copy)) return static_cast<int>(k);
  }
  std::free(copy);
  return -1;
}

void unregister_folder(int slot) noexcept {
  if (slot < 0 || static_cast<size_t>(slot) >= kSlots) return;
  std::free(g_folders[static_cast<size_t>(slot)].exchange(nullptr));
}

CommitGuard::CommitGuard() {
  int state = g_state.load();
  for (;;) {
    while (state < 0) {  // a signal is ending the process on another thread: wait for it
      ::pause();
      state = g_state.load();
    }
    if (g_state.compare_exchange_weak(state, state + 1)) return;
  }
}

CommitGuard::~CommitGuard() {
  if (g_state.fetch_sub(1) != 1 || g_pending.load() == 0) return;
  int idle = 0;
  if (g_state.compare_exchange_strong(idle, -1)) end_process(g_pending.load());
}

}  // namespace rtf::io::output_signals
