// The server thread starts with the object and is stopped and joined by its destructor.
#include "tests/support/ingest_server.hpp"

namespace rtf::test {

namespace {

stream::ZmqServerOptions loopback_any_port() {
  stream::ZmqServerOptions o;
  o.address = "tcp://127.0.0.1:*";
  return o;
}

}  // namespace

IngestServer::IngestServer(const std::filesystem::path& dir)
    : core_(dir), server_(context_, core_, loopback_any_port()) {
  thread_ = std::thread([this] { server_.run(); });
}

IngestServer::~IngestServer() {
  server_.stop();
  thread_.join();
}

}  // namespace rtf::test
