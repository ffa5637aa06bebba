#pragma once
// Redis Cluster's redirections (-MOVED and -ASK error replies): what they
// say, and who follows them. A redirected call did not run.
#include <cstdint>
#include <optional>
#include <string>

struct redisReply;

namespace fairlock::detail {

class Server;

struct Redirect {
  enum class Kind { moved, ask };
  Kind kind;
  std::uint16_t slot;
  std::string host;  // empty: the server that answered
  int port;
};

// The redirection an error reply makes, if it is one.
std::optional<Redirect> redirect_of(const redisReply& r);

// Follows redirections for the servers of a cluster (node/cluster_router.h).
class Redirects {
 public:
  virtual ~Redirects() = default;
  // -MOVED: the slot is served by `to` from now on; the server there.
  virtual Server& moved(const Redirect& to, const Server& from) = 0;
  // -ASK: the slot is being imported by `to`; the server there, for one
  // call after ASKING (the slot's owner does not change).
  virtual Server& asked(const Redirect& to, const Server& from) = 0;
  // A call to `server` found it unreachable (or cut off): it may have
  // failed over; the map is read again soon.
  virtual void unreachable(const Server& server) = 0;
  // `server` is the master of `slot` now, as far as the map knows.
  virtual bool serves(const Server& server, std::uint16_t slot) = 0;
  // A node of the cluster gave this client the slot map: the cluster is
  // there, so a node it names that cannot be reached is failing over (or
  // restarting), which waits ride out as they ride out a restart.
  virtual bool mapped() const = 0;
};

}  // namespace fairlock::detail
