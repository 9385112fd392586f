// VolumeSender: pending set, timeouts, NACK handling, reconnects and END_OF_RUN for protocol-1 senders.
#include "stream/sender/volume_sender.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <variant>

#include "stream/protocol/checksum.hpp"

namespace rtf::stream {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::span<const std::byte> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

// Codes a resend of the intact volume can fix.
bool resend_fixes(ErrorCode code) {
  return code == ErrorCode::kPayloadSize || code == ErrorCode::kChecksumMismatch || code == ErrorCode::kInternal;
}

uint64_t next_random(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void seal_volume(OutgoingVolume& volume) {
  volume.header.payload_bytes = volume.payload.size();
  volume.header.checksum = crc32(volume.payload);
}

VolumeSender::VolumeSender(zmq::context_t& context, SenderOptions options)
    : context_(context), options_(std::move(options)), rng_state_(options_.seed) {
  open_socket();
}

void VolumeSender::open_socket() {
  socket_ = zmq::socket_t(context_, zmq::socket_type::dealer);
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, 100000);
  socket_.set(zmq::sockopt::reconnect_ivl, 100);
  socket_.set(zmq::sockopt::reconnect_ivl_max, 1000);
  socket_.connect(options_.address);
}

bool VolumeSender::transmit(std::span<const std::byte> header, std::span<const std::byte> payload) {
  ++stats_.transmissions;
  try {
    if (!socket_.send(zmq::const_buffer(header.data(), header.size()),
                      zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return false;
    }
    return socket_.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t& e) {
    spdlog::warn("send failed: {}", e.what());
    return false;
  }
}

void VolumeSender::transmit_intact(Pending& p) {
  if (p.attempts > 0) ++stats_.resends;
  ++p.attempts;
  p.last_sent_s = now_s();
  p.last_was_tampered = false;
  transmit(bytes_of(p.header_text), p.volume.payload);
}

void VolumeSender::send(OutgoingVolume volume, Tamper tamper) {
  while (pending_.size() >= options_.max_in_flight) poll(0.05);
  Key key{volume.header.run, volume.header.index};
  Pending p;
  p.header_text = serialize(volume.header);
  p.volume = std::move(volume);
  auto [it, inserted] = pending_.insert_or_assign(key, std::move(p));
  (void)inserted;
  Pending& entry = it->second;
  switch (tamper) {
    case Tamper::kNone:
      transmit_intact(entry);
      break;
    case Tamper::kDuplicate:
      transmit_intact(entry);
      ++stats_.resends;
      transmit(bytes_of(entry.header_text), entry.volume.payload);
      break;
    case Tamper::kDrop:
      ++entry.attempts;  // counts as a transmission the network lost
      entry.last_sent_s = now_s();
      break;
    case Tamper::kCorruptHeader: {
      std::string bad = entry.header_text;
      bad[next_random(rng_state_) % bad.size()] = static_cast<char>(0xFF);
      ++entry.attempts;
      entry.last_sent_s = now_s();
      entry.last_was_tampered = true;
      transmit(bytes_of(bad), entry.volume.payload);
      break;
    }
    case Tamper::kCorruptPayload: {
      std::vector<std::byte> bad = entry.volume.payload;
      if (!bad.empty()) bad[next_random(rng_state_) % bad.size()] ^= std::byte{1} << (next_random(rng_state_) % 8);
      ++entry.attempts;
      entry.last_sent_s = now_s();
      entry.last_was_tampered = true;
      transmit(bytes_of(entry.header_text), bad);
      break;
    }
  }
}

void VolumeSender::fail(const Key& key, const std::string& why) {
  ++stats_.failed;
  failures_.push_back(fmt::format("run {} volume {}: {}", key.first, key.second, why));
  spdlog::error("giving up on run {} volume {}: {}", key.first, key.second, why);
  pending_.erase(key);
}

void VolumeSender::handle_reply(std::string_view text) {
  Parsed<Reply> parsed = parse_reply(text);
  if (!parsed.ok()) {
    ++stats_.unmatched;
    spdlog::warn("unreadable reply: {}", parsed.error.reason);
    return;
  }
  if (const auto* ack = std::get_if<Ack>(&*parsed.value)) {
    if (ack->of == ReplyTo::kEndOfRun) {
      end_of_run_reply_[ack->run] = *ack;
      return;
    }
    if (!ack->index) {
      ++stats_.unmatched;
      return;
    }
    const Key key{ack->run, *ack->index};
    if (ack->duplicate) ++stats_.duplicate_acks;
    if (pending_.erase(key) > 0) {
      ++stats_.acked;
      acknowledged_.push_back(key);
    } else if (!ack->duplicate) {
      ++stats_.duplicate_acks;  // a second ACK for a volume already acknowledged
    }
    return;
  }
  const auto& nack = std::get<Nack>(*parsed.value);
  ++stats_.nacks;
  ++stats_.nacks_by_code[std::string(to_string(nack.code))];
  if (nack.of == ReplyTo::kEndOfRun) {
    end_of_run_reply_[nack.run] = nack;
    return;
  }
  if (nack.of != ReplyTo::kVolume || !nack.index) {
    ++stats_.unmatched;
    spdlog::warn("server could not read a header ({}): {}; the resend timeout will retry", to_string(nack.code),
                 nack.reason);
    return;
  }
  const Key key{nack.run, *nack.index};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    ++stats_.unmatched;
    return;
  }
  Pending& p = it->second;
  if (p.last_was_tampered || resend_fixes(nack.code)) {
    spdlog::info("run {} volume {}: NACK {} ({}); resending", key.first, key.second, to_string(nack.code), nack.reason);
    if (p.attempts >= options_.max_attempts) {
      fail(key, fmt::format("NACK {} after {} attempts: {}", to_string(nack.code), p.attempts, nack.reason));
    } else if (nack.code == ErrorCode::kInternal && !p.last_was_tampered) {
      p.last_sent_s = now_s();  // the server is in trouble: retry after the timeout, not at once
    } else {
      transmit_intact(p);
    }
    return;
  }
  fail(key, fmt::format("NACK {}: {}", to_string(nack.code), nack.reason));
}

void VolumeSender::resend_overdue() {
  const double now = now_s();
  std::vector<Key> give_up;
  for (auto& [key, p] : pending_) {
    if (now - p.last_sent_s < options_.resend_timeout_s) continue;
    if (p.attempts >= options_.max_attempts) {
      give_up.push_back(key);
      continue;
    }
    spdlog::info("run {} volume {}: no reply for {:.2f} s; resending", key.first, key.second, now - p.last_sent_s);
    transmit_intact(p);
  }
  for (const Key& key : give_up) fail(key, fmt::format("no ACK after {} transmissions", options_.max_attempts));
}

void VolumeSender::poll(double wait_s) {
  poll_for(wait_s, false);
}

void VolumeSender::poll_until_reply(double wait_s) {
  poll_for(wait_s, true);
}

void VolumeSender::poll_for(double wait_s, bool until_reply) {
  const double deadline = now_s() + wait_s;
  do {
    bool replied = false;
    const double left = deadline - now_s();
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, std::min(left, 0.05)) * 1000));
    if (zmq::poll(&item, 1, timeout) > 0) {
      zmq::message_t message;
      while (socket_.recv(message, zmq::recv_flags::dontwait)) {
        if (message.more()) {  // replies are one frame; skip anything else whole
          ++stats_.unmatched;
          while (message.more() && socket_.recv(message, zmq::recv_flags::dontwait)) {
          }
          continue;
        }
        handle_reply(message.to_string_view());
        replied = true;
      }
    }
    resend_overdue();
    if (until_reply && replied) return;
  } while (now_s() < deadline);
}

void VolumeSender::reconnect() {
  ++stats_.reconnects;
  socket_.close();
  open_socket();
  for (auto& [key, p] : pending_) transmit_intact(p);
}

bool VolumeSender::drain(double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (!pending_.empty() && now_s() < deadline) poll(0.02);
  return pending_.empty();
}

bool VolumeSender::finish_run(const std::string& session, const std::string& run, int64_t num_volumes, double timeout_s,
                              std::string& error) {
  const double deadline = now_s() + timeout_s;
  drain(timeout_s);
  const std::string text = serialize(EndOfRun{1, session, run, num_volumes});
  while (now_s() < deadline) {
    end_of_run_reply_[run].reset();
    try {
      socket_.send(zmq::buffer(text), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::warn("sending end_of_run: {}", e.what());
    }
    const double sent = now_s();
    while (!end_of_run_reply_[run] && now_s() - sent < options_.resend_timeout_s && now_s() < deadline) poll(0.02);
    const auto& reply = end_of_run_reply_[run];
    if (!reply) continue;  // timed out: send it again
    if (std::holds_alternative<Ack>(*reply)) return true;
    const auto& nack = std::get<Nack>(*reply);
    if (nack.code != ErrorCode::kIncompleteRun && nack.code != ErrorCode::kInternal) {
      error = fmt::format("end_of_run NACK {}: {}", to_string(nack.code), nack.reason);
      return false;
    }
    spdlog::info("end_of_run: {}; waiting for resends", nack.reason);
    if (pending_.empty() && nack.code == ErrorCode::kIncompleteRun) {
      error = fmt::format("the server misses volumes this sender no longer holds: {}", nack.reason);
      return false;
    }
    drain(std::max(0.0, deadline - now_s()));
  }
  error = fmt::format("run {} not closed within {:.1f} s ({} volumes still unacknowledged)", run, timeout_s,
                      pending_.size());
  return false;
}

}  // namespace rtf::stream
