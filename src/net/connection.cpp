#include "net/connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "net/tls.h"

namespace fairlock::detail {

void ReaderDeleter::operator()(redisReader* r) const noexcept {
  if (r) redisReaderFree(r);
}

namespace {

std::unique_ptr<Stream> open_stream(const Target& t) {
  Socket s = dial(t.endpoint, t.connect_timeout);
  return t.tls ? t.tls->handshake(std::move(s), t.endpoint, t.connect_timeout) : plain_stream(std::move(s));
}

}  // namespace

Connection::Connection(const Target& t)
    : where_(t.endpoint.where()),
      command_timeout_(t.command_timeout),
      io_timeout_(t.command_timeout),
      stream_(open_stream(t)),
      reader_(redisReaderCreate()) {
  if (!reader_) throw ConnectionError("redis: cannot allocate a reply reader");
  set_io_timeout(stream_->fd(), t.command_timeout);
  authenticate(t.endpoint);
  // A server that refuses this client's certificate says so after the
  // handshake (TLS 1.3): learn it here rather than on a lock's first call.
  if (stream_->is_tls() && !answered_) command({"PING"});
}

void Connection::authenticate(const Endpoint& ep) {
  if (!ep.password.empty()) {
    Argv auth = ep.user.empty() ? Argv{"AUTH", ep.password} : Argv{"AUTH", ep.user, ep.password};
    ReplyPtr r = command(auth);
    if (is_error(*r)) throw_reply_error(*r, "AUTH");
  }
  if (ep.db != 0) {
    std::string db = std::to_string(ep.db);
    ReplyPtr r = command({"SELECT", db});
    if (is_error(*r)) throw_reply_error(*r, "SELECT");
  }
}

template <class F>
auto Connection::guarded(F&& f) -> decltype(f()) {
  if (broken_) throw ConnectionError("redis: connection is broken");
  try {
    return f();
  } catch (...) {
    broken_ = true;
    throw;
  }
}

// Each read and write waits at most command_timeout, or until the deadline
// of the call (CallDeadline) if that is nearer; none starts after it.
void Connection::bound_io(const CallDeadline::Io& io) {
  const std::chrono::milliseconds t = io.bound(command_timeout_);
  if (t.count() <= 0) throw TimeoutError("redis: the call's deadline passed before " + where_ + " answered");
  if (t == io_timeout_) return;
  set_io_timeout(stream_->fd(), t);
  io_timeout_ = t;
}

std::string Connection::waited() const {
  return io_timeout_ < command_timeout_ ? "before the call's deadline" : "within command_timeout";
}

// A read or write that may block, bounded by bound_io. Cut short because
// the call's deadline moved nearer meanwhile (CallDeadline::Io), it fails
// as a timeout, however the stream took the shutdown of its socket.
template <class F>
IoResult Connection::blocking(F&& io_call) {
  const CallDeadline::Io io(stream_->fd());
  bound_io(io);
  try {
    return io_call();
  } catch (const Error&) {
    if (CallDeadline::passed()) throw TimeoutError("redis: no reply from " + where_ + " before the call's deadline");
    throw;
  }
}

void Connection::lost(Io io) {
  if (io == Io::would_block) throw TimeoutError("redis: no reply from " + where_ + " " + waited());
  if (CallDeadline::passed()) throw TimeoutError("redis: no reply from " + where_ + " before the call's deadline");
  if (!answered_ && !stream_->is_tls() && io == Io::reset) {
    // A TLS-only port resets a plain client on its first bytes.
    throw TlsError(TlsError::Reason::tls_required,
                   "redis: the server at " + where_ + " speaks TLS: use rediss:// in Options::url");
  }
  if (!answered_ && stream_->is_tls()) {
    // TLS 1.3: a server that refuses this client's certificate says so in an
    // alert after the handshake, which may sit unread behind a failed write.
    char buf[512];
    stream_->read(buf, sizeof buf, true);  // throws the TlsError if so
  }
  throw ConnectionError("redis: " + where_ + (io == Io::reset ? " reset the connection" : " closed the connection"));
}

// The command in RESP, written in place: the buffer grows once per command
// (a script call is a dozen arguments; appending piece by piece cost more
// than the rest of the call's client-side work, and hiredis 0.14's
// redisFormatCommandArgv, which formats every length with sprintf into a
// buffer of its own, 12 % more per lock+unlock pair). All or nothing: a
// command is in the buffer whole or not at all.
void Connection::append(const Argv& argv) {
  if (broken_) throw ConnectionError("redis: connection is broken");
  constexpr std::size_t kHeader = 1 + 20 + 2;  // '*' or '$', a 64-bit length, CRLF
  std::size_t most = kHeader;
  for (std::string_view a : argv) most += kHeader + a.size() + 2;
  const std::size_t start = out_.size();
  out_.resize(start + most);
  char* p = out_.data() + start;
  auto header = [&p](char kind, std::size_t n) {
    *p++ = kind;
    p = std::to_chars(p, p + 20, n).ptr;
    *p++ = '\r';
    *p++ = '\n';
  };
  header('*', argv.size());
  for (std::string_view a : argv) {
    header('$', a.size());
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    p += a.size();
    *p++ = '\r';
    *p++ = '\n';
  }
  out_.resize(static_cast<std::size_t>(p - out_.data()));
}

void Connection::flush() {
  guarded([&] {
    std::size_t sent = 0;
    while (sent < out_.size()) {
      IoResult r = blocking([&] { return stream_->write(out_.data() + sent, out_.size() - sent); });
      if (r.io == Io::would_block) throw TimeoutError("redis: writing to " + where_ + " did not finish " + waited());
      if (r.io != Io::done) lost(r.io);
      sent += r.bytes;
    }
    out_.clear();
  });
}

// A complete reply the reader holds, or null.
ReplyPtr Connection::parsed() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    throw ConnectionError(std::string("redis: protocol error from ") + where_ + ": " + reader_->errstr);
  }
  if (raw != nullptr) answered_ = true;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

// One read into the reader; false if nothing came without waiting.
bool Connection::receive(bool dont_wait) {
  char buf[16 * 1024];
  IoResult r =
      dont_wait ? stream_->read(buf, sizeof buf, true) : blocking([&] { return read_when_ready(buf, sizeof buf); });
  if (r.io == Io::would_block && dont_wait) return false;
  if (r.io != Io::done) lost(r.io);
  if (redisReaderFeed(reader_.get(), buf, r.bytes) != REDIS_OK) {
    throw ConnectionError("redis: cannot buffer a reply from " + where_);
  }
  return true;
}

// A blocking read bounded by a call's deadline (bound_io set a bound below
// command_timeout) first waits for the socket to be readable with poll(2):
// poll's timeout is an hrtimer, while the socket's own (SO_RCVTIMEO) runs on
// the kernel's timer wheel, which ends a wait of 256 ms to 2 s up to 32 ms
// late (HZ 250): a call cut at its deadline was cut that much after it. A
// read bounded by command_timeout alone (an untimed call) needs no such
// precision and costs no extra syscall.
IoResult Connection::read_when_ready(char* buf, std::size_t len) {
  if (io_timeout_ < command_timeout_ && !stream_->buffered()) {
    const auto end = std::chrono::steady_clock::now() + io_timeout_;
    pollfd p{stream_->fd(), POLLIN, 0};
    int n = 0;
    do {  // a signal does not restart the whole bound
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      n = ::poll(&p, 1, static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0)));
    } while (n < 0 && errno == EINTR);
    if (n == 0) return {Io::would_block, 0};
  }
  return stream_->read(buf, len, false);
}

ReplyPtr Connection::next_reply() {
  for (;;) {
    if (ReplyPtr r = parsed()) return r;
    receive(false);
  }
}

ReplyPtr Connection::command(const Argv& argv) {
  append(argv);
  flush();
  return guarded([&] { return next_reply(); });
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<Argv>& commands) {
  // All or nothing as well: the first commands of a batch whose append threw
  // (out of memory) must not stay behind, to run with the connection's next
  // command and shift every reply after it.
  const std::size_t start = out_.size();
  try {
    for (const auto& c : commands) append(c);
  } catch (...) {
    out_.resize(start);
    throw;
  }
  flush();
  return guarded([&] {
    std::vector<ReplyPtr> out;
    out.reserve(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) out.push_back(next_reply());
    return out;
  });
}

std::vector<ReplyPtr> Connection::read_available() {
  return guarded([&] {
    std::vector<ReplyPtr> out;
    while (receive(true)) {
      while (ReplyPtr r = parsed()) out.push_back(std::move(r));
    }
    return out;
  });
}

bool Connection::idle_and_open() {
  if (broken_) return false;
  // An idle connection has nothing to read: readable means the server
  // closed it (restart, CLIENT KILL, timeout) or sent something unasked.
  pollfd p{stream_->fd(), POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  if (!stream_->is_tls() || (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
  // TLS: the server may send records that carry no data (a session ticket).
  try {
    return read_available().empty() && !broken_;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace fairlock::detail
