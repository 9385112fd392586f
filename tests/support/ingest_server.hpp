// An ingest server (IngestCore + ZmqIngestServer) on a free loopback port, recording into a folder, running on its own
// thread for the life of the object: the far end of the tests that send volumes (simulator, scanner watch).
#pragma once

#include <filesystem>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "stream/server/ingest_core.hpp"
#include "stream/server/zmq_ingest_server.hpp"

namespace rtf::test {

class IngestServer {
 public:
  explicit IngestServer(const std::filesystem::path& dir);
  ~IngestServer();
  IngestServer(const IngestServer&) = delete;
  IngestServer& operator=(const IngestServer&) = delete;

  std::string endpoint() const { return server_.endpoint(); }
  stream::IngestCore& core() { return core_; }

 private:
  zmq::context_t context_{1};
  stream::IngestCore core_;
  stream::ZmqIngestServer server_;
  std::thread thread_;
};

}  // namespace rtf::test
