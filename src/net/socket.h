#pragma once
// A connected socket to a server (TCP or unix), blocking with per-call
// timeouts; reads and writes that must not wait pass MSG_DONTWAIT.
#include <chrono>

#include "fairlock/errors.h"
#include "net/url.h"

namespace fairlock::detail {

class Socket {
 public:
  explicit Socket(int fd) noexcept : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&&) = delete;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

// How long one blocking read or write on fd may wait (SO_RCVTIMEO/SO_SNDTIMEO).
void set_io_timeout(int fd, std::chrono::milliseconds t);

// No connection could be opened: nothing was sent.
class NotConnected : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

// Connects within the timeout (every address the host resolves to, in
// order); TCP sockets get TCP_NODELAY and keepalive. Throws NotConnected.
Socket dial(const Endpoint& ep, std::chrono::milliseconds timeout);

// What a read or write did.
enum class Io {
  done,         // moved some bytes
  would_block,  // nothing without waiting (or a blocking call timed out)
  closed,       // the peer closed the connection (end of stream)
  reset,        // the peer reset the connection
};

// The Io of a failed send/recv; other errors throw ConnectionError.
Io io_error(int err, const char* what);

}  // namespace fairlock::detail
