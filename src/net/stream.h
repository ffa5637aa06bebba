#pragma once
// A byte stream to a server: a plain socket or TLS over one. Blocking calls
// wait at most the socket's timeout (then Io::would_block); a call with
// dont_wait never waits. Errors other than those in Io throw ConnectionError
// (or TlsError).
#include <cstddef>
#include <memory>

#include "net/socket.h"

namespace fairlock::detail {

struct IoResult {
  Io io;
  std::size_t bytes;
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual IoResult read(char* buf, std::size_t len, bool dont_wait) = 0;
  virtual IoResult write(const char* buf, std::size_t len) = 0;
  virtual int fd() const = 0;
  virtual bool is_tls() const = 0;
  // Bytes a read would return without the socket being readable (TLS
  // records already taken in).
  virtual bool buffered() const { return false; }
};

std::unique_ptr<Stream> plain_stream(Socket s);

}  // namespace fairlock::detail
