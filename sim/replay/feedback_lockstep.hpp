// FeedbackLockstep: a client of the live server's feedback lines (TCP, one JSON object per line: docs/protocol.md §9)
// that tells a replay when the server has finished a volume. `rtfmri sim replay --lockstep HOST:PORT` sends each volume
// only after the line for the one before it arrived, so the server never has two volumes waiting and analyses every
// one: a replay whose result does not depend on how fast or how busy the machine is (tests, exact offline replays
// through the live path). docs/simulator.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace rtf::sim {

class FeedbackLockstep {
 public:
  // Connects to "HOST:PORT", retrying for up to `connect_timeout_s` (the server may still be starting). Throws
  // std::invalid_argument for an unusable address, std::runtime_error when no connection was made in time.
  FeedbackLockstep(const std::string& host_port, double connect_timeout_s);
  ~FeedbackLockstep();
  FeedbackLockstep(const FeedbackLockstep&) = delete;
  FeedbackLockstep& operator=(const FeedbackLockstep&) = delete;

  // Reads the lines that have arrived (never blocks); true once a line of `run` for volume `index` or a later one was
  // seen. Throws std::runtime_error when the server closed the connection.
  bool finished(const std::string& run, int64_t index);

  int64_t lines() const { return lines_; }

 private:
  void read_available();

  int fd_ = -1;
  std::string address_;
  std::string pending_;
  std::map<std::string, int64_t> newest_;  // per run: the highest volume a line was seen for
  int64_t lines_ = 0;
};

}  // namespace rtf::sim
