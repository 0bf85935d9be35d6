// Limits: the resource bounds of one Relay (one route). Every resource a client can make the
// relay spend is bounded here (style item 25): connections, buffered bytes, time.
#pragma once

#include <chrono>
#include <cstddef>

namespace sbx::relay {

struct Limits {
  // Open connections per relay. A connection accepted above this is closed at once and
  // recorded with the end "limit"; it never waits in the listen backlog.
  size_t max_connections = 256;

  // User-space bytes buffered per direction of a connection (the Flow capacity). The buffer
  // is allocated only while bytes are in flight, so an idle connection holds none of it.
  // 16 KiB holds one full TLS record (2^14 bytes of plaintext plus a small overhead fits in
  // two reads) and keeps the worst case per connection at 2 x 16 KiB.
  size_t buffer_bytes = size_t{16} * 1024;

  // A connection that moves no byte in either direction for this long is closed
  // ("idle-timeout"). Long enough for a streamed model answer that pauses to think.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};

  // How long a dial to the target may take before the connection is closed
  // ("upstream-timeout").
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};

  // How long a connection that must start with a TLS ClientHello (DialPolicy::
  // kAfterClientHello) may take to send a whole one ("hello-timeout"). A TLS client sends it
  // right after connecting; this only bounds what a silent or trickling client holds.
  std::chrono::milliseconds hello_timeout{std::chrono::seconds(10)};
};

}  // namespace sbx::relay
