// PynealReceiver: PAIR socket, handshake echo, frame dispatch, pyneal-style reply strings (docs/pyneal.md).
#include "stream/pyneal/pyneal_receiver.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <variant>
#include <zmq_addon.hpp>

#include "stream/pyneal/pyneal_message.hpp"

namespace rtf::stream::pyneal {

namespace {

constexpr size_t kMaxHandshakeBytes = 4096;

std::string_view as_text(const zmq::message_t& m) {
  return {static_cast<const char*>(m.data()), m.size()};
}

std::span<const std::byte> as_bytes(const zmq::message_t& m) {
  return {static_cast<const std::byte*>(m.data()), m.size()};
}

// Valid UTF-8 without control characters other than tab, CR and LF: what pyneal's send_string(str) produces.
bool is_handshake_text(std::string_view s) {
  if (s.empty() || s.size() > kMaxHandshakeBytes) return false;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return false;
      ++i;
      continue;
    }
    size_t extra = 0;
    uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    const uint32_t min = extra == 1 ? 0x80 : extra == 2 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

bool looks_like_json_object(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && s[first] == '{';
}

// volIdx of a rejected header when it can be read (a non-negative JSON integer), for the NACK text.
std::optional<int64_t> readable_index(std::string_view header, size_t max_bytes) {
  auto parsed = detail::parse_json_object(header, max_bytes);
  if (!parsed.ok()) return std::nullopt;
  const auto it = parsed.value->find("volIdx");
  if (it == parsed.value->end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    return v <= static_cast<uint64_t>(INT64_MAX) ? std::optional<int64_t>(static_cast<int64_t>(v)) : std::nullopt;
  }
  const auto v = it->get<int64_t>();
  return v >= 0 ? std::optional<int64_t>(v) : std::nullopt;
}

// pyneal's senders stop when a reply contains "STOP"; a NACK reason (which may quote the sender's own text) must
// never do that by accident.
std::string without_stop(std::string text) {
  for (size_t at = text.find("STOP"); at != std::string::npos; at = text.find("STOP", at)) text.replace(at, 4, "Stop");
  return text;
}

std::unique_ptr<zmq::context_t> new_context() {
  return std::make_unique<zmq::context_t>(1);
}

}  // namespace

PynealReceiver::PynealReceiver(PynealOptions options, VolumeHandler handler)
    : PynealReceiver(new_context(), nullptr, std::move(options), std::move(handler)) {}

PynealReceiver::PynealReceiver(zmq::context_t& context, PynealOptions options, VolumeHandler handler)
    : PynealReceiver(nullptr, &context, std::move(options), std::move(handler)) {}

PynealReceiver::PynealReceiver(std::unique_ptr<zmq::context_t> owned, zmq::context_t* context, PynealOptions options,
                               VolumeHandler handler)
    : owned_context_(std::move(owned)),
      options_(std::move(options)),
      handler_(std::move(handler)),
      socket_(context != nullptr ? *context : *owned_context_, zmq::socket_type::pair),
      monitor_(context != nullptr ? *context : *owned_context_, zmq::socket_type::pair) {
  if (!valid_id(options_.session)) {
    throw std::invalid_argument(fmt::format("pyneal receiver: session \"{}\" is not a valid id ([A-Za-z0-9._-], 1..{})",
                                            options_.session, kMaxIdLength));
  }
  if (!valid_id(options_.run)) {
    throw std::invalid_argument(fmt::format("pyneal receiver: run \"{}\" is not a valid id ([A-Za-z0-9._-], 1..{})",
                                            options_.run, kMaxIdLength));
  }
  if (options_.tr_override_s && !(std::isfinite(*options_.tr_override_s) && *options_.tr_override_s > 0.0)) {
    throw std::invalid_argument(
        fmt::format("pyneal receiver: TR override {} s is not positive", *options_.tr_override_s));
  }
  if (options_.stop_after < 0) throw std::invalid_argument("pyneal receiver: stop_after must be >= 0");
  if (options_.poll_ms <= 0) throw std::invalid_argument("pyneal receiver: poll_ms must be positive");
  if (!handler_) throw std::invalid_argument("pyneal receiver: no volume handler");

  // A larger frame makes ZeroMQ drop the connection before buffering it (docs/pyneal.md, limits).
  const ProtocolLimits& limits = options_.limits;
  max_message_bytes_ =
      options_.max_message_bytes > 0
          ? options_.max_message_bytes
          : static_cast<int64_t>(std::max<uint64_t>(limits.max_payload_bytes, limits.max_header_bytes)) + 4096;
  try {
    socket_.set(zmq::sockopt::linger, std::max(0, options_.linger_ms));
    socket_.set(zmq::sockopt::maxmsgsize, max_message_bytes_);
    // TCP keepalive finds a peer that vanished without closing (pulled cable) within ~25 s, invisibly to the sender.
    socket_.set(zmq::sockopt::tcp_keepalive, 1);
    socket_.set(zmq::sockopt::tcp_keepalive_idle, 10);
    socket_.set(zmq::sockopt::tcp_keepalive_intvl, 5);
    socket_.set(zmq::sockopt::tcp_keepalive_cnt, 3);
    if (options_.heartbeat_ms > 0) {
      socket_.set(zmq::sockopt::heartbeat_ivl, options_.heartbeat_ms);
      socket_.set(zmq::sockopt::heartbeat_timeout, 3 * options_.heartbeat_ms);
    }
    socket_.bind(options_.address);
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(fmt::format("cannot listen for pyneal on {}: {}", options_.address, e.what()));
  }
  // Connection events, so that a sender going away is noticed (and logged) even between volumes.
  const std::string monitor_address = fmt::format("inproc://rtf-pyneal-monitor-{}", static_cast<const void*>(this));
  if (zmq_socket_monitor(socket_.handle(), monitor_address.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    throw std::runtime_error(fmt::format("pyneal receiver: cannot monitor its socket: {}", zmq_strerror(zmq_errno())));
  }
  monitor_.set(zmq::sockopt::linger, 0);
  monitor_.connect(monitor_address);
  spdlog::info("pyneal receiver listening on {} (session {}, run {})", endpoint_, options_.session, options_.run);
}

PynealReceiver::~PynealReceiver() {
  zmq_socket_monitor(socket_.handle(), nullptr, 0);
}

PynealCounters PynealReceiver::counters() const {
  return {connections_.load(), disconnects_.load(), handshakes_.load(), received_.load(),
          acked_.load(),       duplicates_.load(),  rejected_.load(),   stops_.load()};
}

void PynealReceiver::run() {
  std::array<zmq::pollitem_t, 2> items{{{monitor_.handle(), 0, ZMQ_POLLIN, 0}, {socket_.handle(), 0, ZMQ_POLLIN, 0}}};
  while (!stop_.load()) {
    if (options_.return_after_stop && stop_sent()) return;
    log_.poll();
    try {
      if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds(options_.poll_ms)) <= 0) continue;
      // Connection events first, so that a sender's disconnect is noted before a new sender's first message.
      if (items[0].revents & ZMQ_POLLIN) handle_monitor_event();
      if (items[1].revents & ZMQ_POLLIN) {
        Frames frames;
        if (zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) handle(frames);
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      log_.error("socket error", "pyneal socket: {}", e.what());
    } catch (const std::exception& e) {  // e.g. std::bad_alloc for a huge volume; the loop goes on
      log_.error("receiver error", "pyneal receiver: {}", e.what());
    }
  }
}

void PynealReceiver::handle_monitor_event() {
  Frames event;
  if (!zmq::recv_multipart(monitor_, std::back_inserter(event), zmq::recv_flags::dontwait)) return;
  if (event.empty() || event[0].size() < 6) return;
  uint16_t id = 0;
  std::memcpy(&id, event[0].data(), sizeof id);
  if (id == ZMQ_EVENT_ACCEPTED) {
    const int64_t open = ++connections_ - disconnects_.load();
    log_.log(spdlog::level::info, "connected", "pyneal: sender connected to {}", endpoint_);
    if (open > 1) {
      log_.warn("senders connected",
                "pyneal: {} senders connected; a PAIR socket serves only the first, the others are not heard until "
                "they reconnect after it has gone",
                open);
    }
  } else if (id == ZMQ_EVENT_DISCONNECTED) {
    ++disconnects_;
    log_.log(spdlog::level::info, "disconnected", "pyneal: sender disconnected from {}", endpoint_);
    if (pending_header_) {
      pending_header_.reset();
      ++rejected_;
      log_.warn("header dropped",
                "pyneal: a header sent alone was dropped: its sender disconnected before sending the data");
    }
  }
}

void PynealReceiver::handle(Frames& frames) {
  const int64_t received_ns = steady_now_ns();
  if (pending_header_) {
    std::string header = std::move(*pending_header_);
    pending_header_.reset();
    if (frames.size() == 1) {
      // The data frame of a header sent without SNDMORE, as pyneal's receiver reads it, unless it is a handshake
      // from a restarted sender (a handshake string of a size other than the data's).
      const auto parsed = parse_pyneal_header(header, options_.limits);
      const bool data_size = parsed.ok() && frames[0].size() == parsed.value->payload_bytes();
      if (data_size || !is_handshake_text(as_text(frames[0]))) {
        reply(handle_volume(header, as_bytes(frames[0]), received_ns));
        return;
      }
    }
    ++rejected_;
    log_.warn("header dropped",
              "pyneal: a header sent alone was followed by a {}-frame message instead of its data; header dropped",
              frames.size());
  }
  if (frames.size() == 2) {
    reply(handle_volume(as_text(frames[0]), as_bytes(frames[1]), received_ns));
    return;
  }
  if (frames.size() == 1) {
    const std::string_view text = as_text(frames[0]);
    if (looks_like_json_object(text)) {
      // pyneal's receiver reads the header and the data with two recv calls, so a header sent without SNDMORE
      // followed by the data as its own message works there; it works here too. The reply follows the data.
      if (text.size() > options_.limits.max_header_bytes) {
        reply(reject(
            std::nullopt, ErrorCode::kTooLarge,
            fmt::format("header frame is {} bytes, the limit is {}", text.size(), options_.limits.max_header_bytes),
            false));
        return;
      }
      pending_header_ = std::string(text);
      return;
    }
    if (is_handshake_text(text)) {
      ++handshakes_;
      spdlog::info("pyneal: handshake \"{}\" echoed", detail::sanitize(text, 80));
      reply(std::string(text));
      return;
    }
    reply(
        reject(std::nullopt, ErrorCode::kMalformed,
               fmt::format("a single {}-byte frame that is neither a handshake string nor a JSON header", text.size()),
               false));
    return;
  }
  reply(reject(std::nullopt, ErrorCode::kBadFrames,
               fmt::format("message of {} frames; a volume is 2 frames (send_json(header, zmq.SNDMORE), then "
                           "send(data)), a handshake 1",
                           frames.size()),
               false));
}

std::string PynealReceiver::handle_volume(std::string_view header_text, std::span<const std::byte> data,
                                          int64_t received_ns) {
  ++received_;
  const ProtocolLimits& limits = options_.limits;
  auto header = parse_pyneal_header(header_text, limits);
  if (!header.ok()) {
    return reject(readable_index(header_text, limits.max_header_bytes), header.error.code, header.error.reason, false);
  }
  const PynealHeader& h = *header.value;
  if (options_.stop_after > 0 && h.vol_idx >= options_.stop_after) {
    return reject(h.vol_idx, ErrorCode::kIndexOutOfRange,
                  fmt::format("volIdx {} is past the end of the run ({} volumes)", h.vol_idx, options_.stop_after),
                  true);
  }
  if (!h.ignored_fields.empty() && !warned_ignored_fields_) {
    warned_ignored_fields_ = true;
    spdlog::info("pyneal: header fields ignored: {}", fmt::join(h.ignored_fields, ", "));
  }
  if (h.tr_was_milliseconds && !warned_tr_ms_) {
    warned_tr_ms_ = true;
    spdlog::warn("pyneal: 'TR' of {} s read as milliseconds (>= {})", *h.tr_s * 1000.0, kTrMillisecondThreshold);
  }
  if (options_.tr_override_s && h.tr_s && std::abs(*h.tr_s - *options_.tr_override_s) > kTrTolerance &&
      !warned_tr_override_) {
    warned_tr_override_ = true;
    spdlog::warn("pyneal: header TR {} s differs from the TR override {} s; using the override", *h.tr_s,
                 *options_.tr_override_s);
  }

  PynealParseOptions parse_options{options_.session, options_.run, options_.tr_override_s, limits};
  auto volume = to_volume(h, data, parse_options);
  if (!volume.ok()) return reject(h.vol_idx, volume.error.code, volume.error.reason, false);

  Reply result;
  try {
    result = handler_(volume.value->header, std::move(volume.value->payload), received_ns);
  } catch (const std::exception& e) {  // handlers do not throw; if one does, the sender still gets an answer
    result = Nack{ReplyTo::kVolume, options_.session,     options_.run,
                  h.vol_idx,        ErrorCode::kInternal, "volume handler failed: " + detail::sanitize(e.what())};
  } catch (...) {
    result = Nack{ReplyTo::kVolume, options_.session,     options_.run,
                  h.vol_idx,        ErrorCode::kInternal, "volume handler failed"};
  }
  if (const auto* nack = std::get_if<Nack>(&result)) {
    return reject(h.vol_idx, nack->code, nack->reason, nack->code == ErrorCode::kRunClosed);
  }
  const bool duplicate = std::get<Ack>(result).duplicate;
  ++acked_;
  if (duplicate) ++duplicates_;
  const bool stop = options_.stop_after > 0 && h.vol_idx == options_.stop_after - 1;
  std::string text = fmt::format("received volIdx {}", h.vol_idx);
  if (duplicate) text += " (duplicate)";
  if (stop) {
    text += " STOP";
    ++stops_;
    spdlog::info("pyneal: volIdx {} is the last of {}; replying STOP", h.vol_idx, options_.stop_after);
  }
  spdlog::debug("pyneal: {}", text);
  return text;
}

std::string PynealReceiver::reject(const std::optional<int64_t>& index, ErrorCode code, const std::string& reason,
                                   bool stop) {
  ++rejected_;
  std::string text =
      index ? fmt::format("NACK volIdx {}: {}: ", *index, to_string(code)) : fmt::format("NACK: {}: ", to_string(code));
  text += without_stop(detail::sanitize(reason, 500));
  if (stop) {
    text += " STOP";
    ++stops_;
  }
  log_.warn(to_string(code), "pyneal: {}", text);
  return text;
}

void PynealReceiver::reply(const std::string& text) {
  try {
    if (!socket_.send(zmq::buffer(text), zmq::send_flags::dontwait)) {
      log_.warn("reply not sent", "pyneal: reply not sent (no sender connected): {}", detail::sanitize(text, 200));
    }
  } catch (const zmq::error_t& e) {
    log_.warn("reply not sent", "pyneal: reply not sent: {}", e.what());
  }
}

}  // namespace rtf::stream::pyneal
