// AfniRtReceiver: one Boost.Asio io_context driven by run(); a chain of callbacks walks each session through
// control accept -> control string -> data accept -> header -> images -> (end marker -> header ...) -> back to
// control accept. Everything after the constructor happens on run()'s thread, so the state needs no lock.
#include "stream/afni/afni_rt_receiver.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include "core/util/rate_limited_log.hpp"
#include "stream/afni/afni_rt_assembler.hpp"
#include "stream/output/asio.hpp"

namespace rtf::stream::afni {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

constexpr size_t kMaxControlBytes = 1024;  // a control string is "tcp:host:port" plus at most an info-program line
constexpr size_t kReadChunk = 64 * 1024;

bool printable(std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// "tcp:HOST:PORT" -> PORT; an error text otherwise.
std::variant<uint16_t, std::string> data_port_of(std::string_view control) {
  std::string_view first = control.substr(0, control.find('\n'));
  std::string_view rest = control.size() > first.size() ? control.substr(first.size() + 1) : std::string_view{};
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r' || rest.back() == ' ')) rest.remove_suffix(1);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  if (!printable(first) || !printable(rest)) return std::string("control string is not text");
  if (!rest.empty()) {
    return fmt::format(
        "control string names an info program (\"{}\"); rtfmri runs no programs: send every command "
        "in the data channel's header",
        detail::sanitize(rest, 80));
  }
  if (first.starts_with("shm:")) {
    return fmt::format(
        "\"{}\" asks for a shared-memory data channel; rtfmri takes TCP only (give rtfeedme/Dimon "
        "-host so that they send \"tcp:HOST:PORT\")",
        detail::sanitize(first, 80));
  }
  const size_t colon = first.rfind(':');
  if (!first.starts_with("tcp:") || colon < 4) {
    return fmt::format("control string \"{}\" is not \"tcp:HOST:PORT\"", detail::sanitize(first, 80));
  }
  const std::string_view port_text = first.substr(colon + 1);
  unsigned port = 0;
  for (const char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) return fmt::format("bad port in \"{}\"", detail::sanitize(first, 80));
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port_text.empty() || port == 0 || port > 65535) {
    return fmt::format("bad port in \"{}\"", detail::sanitize(first, 80));
  }
  return static_cast<uint16_t>(port);
}

}  // namespace

std::optional<std::pair<std::string, uint16_t>> parse_host_port(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  unsigned port = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<unsigned>(c - '0');
    if (port > 65535) return std::nullopt;
  }
  return std::make_pair(std::string(text.substr(0, colon)), static_cast<uint16_t>(port));
}

std::string afni_run_id(const std::string& prefix, int number, int channel, int channels) {
  std::string id = fmt::format("{}{:02d}", prefix, number);
  if (channels > 1) id += fmt::format("-ch{}", channel + 1);
  return id;
}

struct AfniRtReceiver::Impl {
  Impl(AfniRtOptions o, VolumeHandler h, EndOfRunHandler e)
      : options(std::move(o)),
        handler(std::move(h)),
        end_of_run(std::move(e)),
        control_acceptor(io),
        data_acceptor(io),
        control_socket(io),
        data_socket(io),
        timer(io) {}

  // --- control channel ---------------------------------------------------------------------------------------
  void accept_control() {
    control_socket = tcp::socket(io);
    control_acceptor.async_accept(control_socket, [this](const error_code& ec) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        log_lines.warn("accept failed", "afni-rt: accepting a control connection: {}", ec.message());
        accept_control();
        return;
      }
      ++counters.control_connections;
      error_code pe;
      const tcp::endpoint remote = control_socket.remote_endpoint(pe);
      peer = remote.address();
      peer_text = pe ? std::string("?") : fmt::format("{}:{}", remote.address().to_string(), remote.port());
      log_lines.log(spdlog::level::info, "control connection", "afni-rt: control connection from {}", peer_text);
      control_text.clear();
      arm_timer(
          [this] { refuse_control(fmt::format("no control string within {} ms", options.handshake_timeout.count())); });
      read_control();
    });
  }

  void read_control() {
    control_socket.async_read_some(asio::buffer(chunk.data(), 512), [this](const error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      control_text.append(chunk.data(), n);
      const size_t nul = control_text.find('\0');
      if (nul != std::string::npos) {
        handle_control_string(control_text.substr(0, nul));
        return;
      }
      if (control_text.size() > kMaxControlBytes) {
        refuse_control(fmt::format("{} bytes on the control channel without a '\\0'", control_text.size()));
      } else if (ec) {
        refuse_control(fmt::format("control connection closed before its '\\0'-terminated string ({}; {} bytes)",
                                   ec.message(), control_text.size()));
      } else {
        read_control();
      }
    });
  }

  void refuse_control(const std::string& why) {
    ++counters.control_rejected;
    log_lines.warn("control refused", "afni-rt: control connection from {} refused: {}", peer_text, why);
    end_session();
  }

  void handle_control_string(const std::string& text) {
    auto port = data_port_of(text);
    if (const auto* why = std::get_if<std::string>(&port)) {
      refuse_control(*why);
      return;
    }
    const uint16_t data_port = std::get<uint16_t>(port);
    error_code ec;
    const tcp::endpoint where(bind_address, data_port);
    data_acceptor = tcp::acceptor(io);
    data_acceptor.open(where.protocol(), ec);
    if (!ec) data_acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) data_acceptor.bind(where, ec);
    if (!ec) data_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      refuse_control(
          fmt::format("cannot listen for the data channel on {}:{}: {}", options.address, data_port, ec.message()));
      return;
    }
    spdlog::info("afni-rt: control string \"{}\"; waiting for the data connection on {}:{}", detail::sanitize(text, 80),
                 options.address, data_port);
    close(control_socket);
    arm_timer([this] {
      ++counters.control_rejected;
      log_lines.warn("control refused", "afni-rt: no data connection from {} within {} ms", peer_text,
                     options.handshake_timeout.count());
      end_session();
    });
    accept_data();
  }

  // --- data channel ------------------------------------------------------------------------------------------
  void accept_data() {
    data_socket = tcp::socket(io);
    data_acceptor.async_accept(data_socket, [this](const error_code& ec) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        log_lines.warn("accept failed", "afni-rt: accepting the data connection: {}", ec.message());
        accept_data();
        return;
      }
      error_code pe;
      const tcp::endpoint remote = data_socket.remote_endpoint(pe);
      if (options.same_peer_only && (pe || remote.address() != peer)) {
        ++counters.foreign_data_connections;
        log_lines.warn("data refused", "afni-rt: data connection from {} refused: the control connection came from {}",
                       pe ? std::string("?") : remote.address().to_string(), peer_text);
        close(data_socket);
        accept_data();
        return;
      }
      timer.cancel();
      ++timer_generation;
      close(data_acceptor);
      ++counters.data_connections;
      log_lines.log(spdlog::level::info, "data connection", "afni-rt: data connection from {}",
                    pe ? std::string("?") : remote.address().to_string());
      carry.clear();
      runs_on_connection = 0;
      read_header();
    });
  }

  void read_header() {
    const size_t nul = carry.find('\0');
    if (nul != std::string::npos) {
      std::string text = carry.substr(0, nul);
      carry.erase(0, nul + 1);
      start_run(text);
      return;
    }
    if (carry.size() > kMaxHeaderBytes) {
      ++counters.headers_rejected;
      log_lines.error("header refused",
                      "afni-rt: header refused: no '\\0' within {} bytes; closing the data connection",
                      kMaxHeaderBytes);
      end_session();
      return;
    }
    data_socket.async_read_some(asio::buffer(chunk), [this](const error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      carry.append(chunk.data(), n);
      if (!ec || carry.find('\0') != std::string::npos) {
        read_header();
        return;
      }
      if (carry.empty() && runs_on_connection > 0) {
        spdlog::info("afni-rt: source closed the data connection after {} run(s)", runs_on_connection);
      } else if (carry.empty()) {
        log_lines.warn("closed before header", "afni-rt: data connection closed before any header ({})", ec.message());
      } else {
        ++counters.headers_rejected;
        log_lines.error("header refused", "afni-rt: data connection closed inside the header ({} bytes, no '\\0'; {})",
                        carry.size(), ec.message());
      }
      end_session();
    });
  }

  void start_run(const std::string& text) {
    auto parsed = parse_afni_rt_header(text, options.limits);
    if (!parsed.ok()) {
      ++counters.headers_rejected;
      log_lines.error("header refused", "afni-rt: header refused ({}): {}; closing the data connection",
                      to_string(parsed.error.code), parsed.error.reason);
      end_session();
      return;
    }
    AfniRtHeader& h = *parsed.value;
    const int number = next_run++;
    std::vector<std::string> ids;
    for (int c = 0; c < h.num_channels; ++c) ids.push_back(afni_run_id(options.run_prefix, number, c, h.num_channels));
    for (const std::string& line : h.ignored) spdlog::info("afni-rt: header command accepted, ignored: {}", line);
    for (const std::string& line : h.warnings) spdlog::warn("afni-rt: {}", line);
    if (h.tr_defaulted) spdlog::warn("afni-rt: the header has no TR; using AFNI's default of 1 s");
    spdlog::info(
        "afni-rt: run {} ({}): {} {}x{}x{} {}{}, voxels {:.4g}x{:.4g}x{:.4g} mm{}, TR {} s, {} slice times, {} "
        "channel(s), {} bytes per image",
        ids[0], options.session, to_string(h.acquisition), h.dims[0], h.dims[1], h.dims[2], h.datum,
        h.big_endian ? " (MSB_FIRST)" : "", h.voxel_mm[0], h.voxel_mm[1], h.voxel_mm[2], h.oblique ? ", oblique" : "",
        h.tr_s, h.slice_timing_s.size(), h.num_channels, h.image_bytes());
    image.assign(static_cast<size_t>(h.image_bytes()), std::byte{0});
    assembler.emplace(std::move(h), options.session, std::move(ids));
    ++counters.runs;
    ++runs_on_connection;
    warned_single_volume = false;
    read_images();
  }

  // Takes whole images from `carry` (bytes read past the header), then reads the rest exactly.
  void read_images() {
    const size_t size = image.size();
    while (carry.size() >= size) {
      std::memcpy(image.data(), carry.data(), size);
      carry.erase(0, size);
      if (!take_image()) return;
    }
    const size_t have = carry.size();
    std::memcpy(image.data(), carry.data(), have);
    carry.clear();
    asio::async_read(data_socket, asio::buffer(image.data() + have, size - have),
                     [this, have, size](const error_code& ec, size_t n) {
                       if (ec == asio::error::operation_aborted) return;
                       if (ec) {
                         const size_t got = have + n;
                         if (got == 0) {
                           spdlog::info("afni-rt: source closed the data connection: run {} ends",
                                        assembler->run_id(0));
                           finish_run("the source disconnected");
                         } else {
                           ++counters.short_reads;
                           spdlog::warn(
                               "afni-rt: short read: the data connection ended {} bytes into image #{} of run "
                               "{} ({} bytes; {}); that image is dropped",
                               got, assembler->images(), assembler->run_id(0), size, ec.message());
                           finish_run("the source disconnected mid-image");
                         }
                         end_session();
                         return;
                       }
                       if (take_image()) read_images();
                     });
  }

  // Handles the image in `image`; false when reading images must stop (the callee has moved on).
  bool take_image() {
    if (image.size() >= kEndMarker.size() && std::memcmp(image.data(), kEndMarker.data(), kEndMarker.size()) == 0) {
      ++counters.end_markers;
      spdlog::info("afni-rt: end marker: run {} ends", assembler->run_id(0));
      finish_run("the end marker");
      read_header();  // the source may start a new run on this connection
      return false;
    }
    ++counters.images;
    std::optional<AfniRtVolume> v = assembler->add_image(image);
    if (!v) return true;
    if (assembler->header().single_volume() && v->header.index == 1 && !warned_single_volume) {
      warned_single_volume = true;
      spdlog::warn("afni-rt: run {} said ACQUISITION_TYPE {} (one volume) but sends more; keeping them", v->header.run,
                   to_string(assembler->header().acquisition));
    }
    ++counters.received;
    const int64_t index = v->header.index;
    const std::string run = v->header.run;
    Reply reply;
    try {
      reply = handler(v->header, std::move(v->payload), steady_now_ns());
    } catch (const std::exception& e) {
      reply = Nack{ReplyTo::kVolume,
                   options.session,
                   run,
                   index,
                   ErrorCode::kInternal,
                   std::string("volume handler failed: ") + e.what()};
    } catch (...) {
      reply = Nack{ReplyTo::kVolume, options.session, run, index, ErrorCode::kInternal, "volume handler failed"};
    }
    if (const auto* nack = std::get_if<Nack>(&reply)) {
      ++counters.rejected;
      log_lines.error("volume refused", "afni-rt: volume #{} of run {} refused ({}): {}; closing the data connection",
                      index, run, to_string(nack->code), nack->reason);
      handed_back(v->channel);
      finish_run("a refused volume");
      end_session();
      return false;
    }
    ++counters.acked;
    if (std::get<Ack>(reply).duplicate) ++counters.duplicates;
    spdlog::debug("afni-rt: volume #{} of run {} accepted", index, run);
    return true;
  }

  // The refused volume was counted by the assembler but not recorded: the run closes one short.
  void handed_back(int channel) { refused_channel = channel; }

  void finish_run(const std::string& why) {
    if (!assembler) return;
    if (const int64_t pending = assembler->pending_slices(); pending > 0) {
      spdlog::warn("afni-rt: run {} ended ({}) with {} slice(s) of an incomplete volume; dropped", assembler->run_id(0),
                   why, pending);
    }
    const int channels = assembler->header().num_channels;
    for (int c = 0; c < channels; ++c) {
      int64_t volumes = assembler->volumes(c);
      if (refused_channel == c) --volumes;
      if (volumes <= 0 || !end_of_run) continue;
      const EndOfRun message{1, options.session, assembler->run_id(c), volumes};
      Reply r;
      try {
        r = end_of_run(message);
      } catch (const std::exception& e) {
        r = Nack{ReplyTo::kEndOfRun, options.session, message.run, std::nullopt, ErrorCode::kInternal, e.what()};
      }
      if (const auto* nack = std::get_if<Nack>(&r)) {
        spdlog::error("afni-rt: run {} not closed ({}): {}", message.run, to_string(nack->code), nack->reason);
      } else {
        ++counters.runs_closed;
        spdlog::info("afni-rt: run {} closed with {} volume(s) ({})", message.run, volumes, why);
      }
    }
    assembler.reset();
    refused_channel = -1;
  }

  // --- common ------------------------------------------------------------------------------------------------
  template <typename OnExpiry>
  void arm_timer(OnExpiry on_expiry) {
    const uint64_t generation = ++timer_generation;
    timer.expires_after(options.handshake_timeout);
    timer.async_wait([this, generation, on_expiry](const error_code& ec) {
      if (ec || generation != timer_generation) return;
      on_expiry();
    });
  }

  template <typename Closable>
  static void close(Closable& c) {
    error_code ignored;
    c.close(ignored);
  }

  // Back to waiting for the next control connection.
  void end_session() {
    timer.cancel();
    ++timer_generation;
    close(control_socket);
    close(data_socket);
    close(data_acceptor);
    finish_run("the connection was closed");
    carry.clear();
    asio::post(io, [this] { accept_control(); });
  }

  AfniRtOptions options;
  VolumeHandler handler;
  EndOfRunHandler end_of_run;
  asio::io_context io;
  asio::ip::address bind_address;
  tcp::acceptor control_acceptor;
  tcp::acceptor data_acceptor;
  tcp::socket control_socket;
  tcp::socket data_socket;
  asio::steady_timer timer;
  uint64_t timer_generation = 0;
  std::array<char, kReadChunk> chunk{};
  std::string control_text;
  std::string carry;  // bytes read from the data connection and not yet used
  std::vector<std::byte> image;
  std::optional<AfniRtAssembler> assembler;
  asio::ip::address peer;
  std::string peer_text = "?";
  int next_run = 1;
  int runs_on_connection = 0;
  int refused_channel = -1;
  bool warned_single_volume = false;
  uint16_t control_port = 0;
  std::atomic<bool> stopped{false};
  RateLimitedLog log_lines{"afni-rt log lines"};  // per connection, image and run: a flood of them is counted
  struct AtomicCounters {
    std::atomic<int64_t> control_connections{0}, control_rejected{0}, data_connections{0}, foreign_data_connections{0},
        headers_rejected{0}, runs{0}, end_markers{0}, short_reads{0}, images{0}, received{0}, acked{0}, duplicates{0},
        rejected{0}, runs_closed{0};
  } counters;
};

AfniRtReceiver::AfniRtReceiver(AfniRtOptions options, VolumeHandler handler, EndOfRunHandler end_of_run) {
  if (!valid_id(options.session)) {
    throw std::invalid_argument(fmt::format("AFNI receiver: session \"{}\" is not a valid id ([A-Za-z0-9._-], 1..{})",
                                            options.session, kMaxIdLength));
  }
  if (options.first_run < 0 || !valid_id(afni_run_id(options.run_prefix, options.first_run, 0, kMaxChannels))) {
    throw std::invalid_argument(fmt::format("AFNI receiver: run prefix \"{}\" with first run {} gives no valid run id",
                                            options.run_prefix, options.first_run));
  }
  if (options.handshake_timeout.count() <= 0)
    throw std::invalid_argument("AFNI receiver: handshake timeout must be positive");
  if (!handler) throw std::invalid_argument("AFNI receiver: no volume handler");
  error_code ec;
  const auto address = asio::ip::make_address(options.address == "localhost" ? "127.0.0.1" : options.address, ec);
  if (ec) throw std::invalid_argument(fmt::format("AFNI receiver: \"{}\" is not an IP address", options.address));
  impl_ = std::make_unique<Impl>(std::move(options), std::move(handler), std::move(end_of_run));
  Impl& m = *impl_;
  m.bind_address = address;
  m.next_run = m.options.first_run;
  const tcp::endpoint where(address, m.options.control_port);
  m.control_acceptor.open(where.protocol(), ec);
  if (!ec) m.control_acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.control_acceptor.bind(where, ec);
  if (!ec) m.control_acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("cannot listen for AFNI real-time control connections on {}:{}: {}",
                                         m.options.address, m.options.control_port, ec.message()));
  }
  m.control_port = m.control_acceptor.local_endpoint().port();
  spdlog::info("afni-rt: listening for control connections on {}:{} (session {}, first run {})", m.options.address,
               m.control_port, m.options.session, afni_run_id(m.options.run_prefix, m.next_run, 0, 1));
}

AfniRtReceiver::~AfniRtReceiver() = default;

void AfniRtReceiver::run() {
  Impl& m = *impl_;
  if (m.stopped.load()) return;
  m.accept_control();
  while (!m.stopped.load()) {
    try {
      m.io.run();
      return;                            // stopped
    } catch (const std::exception& e) {  // e.g. std::bad_alloc; the session is dropped, the receiver goes on
      spdlog::error("afni-rt: {}", e.what());
      m.end_session();
    }
  }
}

void AfniRtReceiver::stop() {
  impl_->stopped.store(true);
  impl_->io.stop();
}

uint16_t AfniRtReceiver::control_port() const {
  return impl_->control_port;
}

AfniRtCounters AfniRtReceiver::counters() const {
  const auto& c = impl_->counters;
  return {c.control_connections.load(),
          c.control_rejected.load(),
          c.data_connections.load(),
          c.foreign_data_connections.load(),
          c.headers_rejected.load(),
          c.runs.load(),
          c.end_markers.load(),
          c.short_reads.load(),
          c.images.load(),
          c.received.load(),
          c.acked.load(),
          c.duplicates.load(),
          c.rejected.load(),
          c.runs_closed.load()};
}

}  // namespace rtf::stream::afni
