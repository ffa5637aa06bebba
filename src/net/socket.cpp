#include "net/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "fairlock/errors.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// Waits for a non-blocking connect; returns 0 or the connect's errno.
int finish_connect(int fd, steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

// A connected blocking socket, or the errno of the attempt.
int try_connect(int family, const sockaddr* addr, socklen_t len, steady_clock::time_point deadline, int& out) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = 0;
  if (::connect(fd, addr, len) != 0) {
    err = errno == EINPROGRESS ? finish_connect(fd, deadline) : errno;
  }
  if (err == 0 && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) err = errno;
  if (err != 0) {
    ::close(fd);
    return err;
  }
  out = fd;
  return 0;
}

void tune_tcp(int fd) {
  int on = 1, idle = 15, interval = 5, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

[[noreturn]] void cannot_connect(const Endpoint& ep, const std::string& why) {
  throw NotConnected("redis: cannot connect to " + ep.where() + ": " + why);
}

Socket dial_unix(const Endpoint& ep, steady_clock::time_point deadline) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (ep.path.size() >= sizeof a.sun_path) cannot_connect(ep, "socket path too long");
  std::memcpy(a.sun_path, ep.path.c_str(), ep.path.size() + 1);
  int fd = -1;
  int err = try_connect(AF_UNIX, reinterpret_cast<const sockaddr*>(&a), sizeof a, deadline, fd);
  if (err != 0) cannot_connect(ep, std::strerror(err));
  return Socket(fd);
}

Socket dial_tcp(const Endpoint& ep, steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &found);
  if (rc != 0) cannot_connect(ep, ::gai_strerror(rc));
  int err = ENOENT, fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    err = try_connect(a->ai_family, a->ai_addr, a->ai_addrlen, deadline, fd);
  }
  ::freeaddrinfo(found);
  if (fd < 0) cannot_connect(ep, std::strerror(err));
  tune_tcp(fd);
  return Socket(fd);
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

void set_io_timeout(int fd, milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

Socket dial(const Endpoint& ep, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  return ep.unix_socket ? dial_unix(ep, deadline) : dial_tcp(ep, deadline);
}

Io io_error(int err, const char* what) {
  if (err == EAGAIN || err == EWOULDBLOCK) return Io::would_block;
  if (err == ECONNRESET) return Io::reset;
  if (err == EPIPE) return Io::closed;
  throw ConnectionError(std::string("redis: ") + what + " failed: " + std::strerror(err));
}

}  // namespace fairlock::detail
