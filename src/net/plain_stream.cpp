#include <sys/socket.h>

#include <cerrno>

#include "net/stream.h"

namespace fairlock::detail {

namespace {

class PlainStream final : public Stream {
 public:
  explicit PlainStream(Socket s) : socket_(std::move(s)) {}

  IoResult read(char* buf, std::size_t len, bool dont_wait) override {
    for (;;) {
      ssize_t n = ::recv(socket_.fd(), buf, len, dont_wait ? MSG_DONTWAIT : 0);
      if (n > 0) return {Io::done, static_cast<std::size_t>(n)};
      if (n == 0) return {Io::closed, 0};
      if (errno != EINTR) return {io_error(errno, "read"), 0};
    }
  }

  IoResult write(const char* buf, std::size_t len) override {
    for (;;) {
      // MSG_NOSIGNAL: a server that went away is an error, never a SIGPIPE.
      ssize_t n = ::send(socket_.fd(), buf, len, MSG_NOSIGNAL);
      if (n >= 0) return {Io::done, static_cast<std::size_t>(n)};
      if (errno != EINTR) return {io_error(errno, "write"), 0};
    }
  }

  int fd() const override { return socket_.fd(); }
  bool is_tls() const override { return false; }

 private:
  Socket socket_;
};

}  // namespace

std::unique_ptr<Stream> plain_stream(Socket s) { return std::make_unique<PlainStream>(std::move(s)); }

}  // namespace fairlock::detail
