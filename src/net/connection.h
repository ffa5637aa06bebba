#pragma once
// One connection to a server over our own socket (plain or TLS); commands
// are written as RESP here, replies parsed by hiredis's reader. Blocking
// calls wait at most command_timeout for each read or write; nothing outside
// src/ sees a hiredis or OpenSSL type.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/call_deadline.h"
#include "net/reply.h"
#include "net/stream.h"
#include "net/url.h"

struct redisReader;

namespace fairlock::detail {

class TlsContext;
class MasterLocator;

// Where and how to connect.
struct Target {
  Endpoint endpoint;
  std::shared_ptr<const TlsContext> tls;  // set for rediss://
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds command_timeout;
  // Through Sentinel: asks where the master is (endpoint then has its
  // credentials, db and TLS, not its host). Opened by open_connection().
  std::shared_ptr<MasterLocator> locator = nullptr;
};

using Argv = std::vector<std::string_view>;

struct ReaderDeleter {
  void operator()(redisReader* r) const noexcept;
};

// Error replies are returned, not thrown; I/O failures throw
// ConnectionError / TimeoutError (TlsError for TLS) and leave the
// connection broken() (the pool then drops it).
class Connection {
 public:
  explicit Connection(const Target& t);
  ReplyPtr command(const Argv& argv);
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands);
  // For the subscriber: queue a command without reading its reply.
  void append(const Argv& argv);
  void flush();
  // Reads whatever has arrived, without waiting; every complete reply.
  std::vector<ReplyPtr> read_available();
  int fd() const { return stream_->fd(); }
  bool broken() const { return broken_; }
  // Not to be used again (the server turned out not to be the master).
  void discard() { broken_ = true; }
  // Through Sentinel: the locator's generation when it was opened.
  std::uint64_t generation() const { return generation_; }
  void set_generation(std::uint64_t g) { generation_ = g; }
  // False when an idle connection was closed by the server meanwhile
  // (checked without blocking before the pool hands it out again).
  bool idle_and_open();

 private:
  template <class F>
  auto guarded(F&& f) -> decltype(f());
  void authenticate(const Endpoint& ep);
  ReplyPtr next_reply();
  ReplyPtr parsed();
  bool receive(bool dont_wait);
  IoResult read_when_ready(char* buf, std::size_t len);
  [[noreturn]] void lost(Io io);
  void bound_io(const CallDeadline::Io& io);
  template <class F>
  IoResult blocking(F&& io_call);
  std::string waited() const;
  std::string where_;
  const std::chrono::milliseconds command_timeout_;
  std::chrono::milliseconds io_timeout_;  // as set on the socket now
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
  std::string out_;
  bool broken_ = false;
  bool answered_ = false;  // a reply has arrived on this connection
  std::uint64_t generation_ = 0;
};

}  // namespace fairlock::detail
