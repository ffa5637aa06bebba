#pragma once
// Replica acknowledgement (Options::sync_replicas): what ends a pipeline
// whose writes must reach N replicas before its caller believes them, and
// what WAIT answered. WAIT counts the replication offset of its own
// connection's last write that propagated, and a script whose writes change
// nothing (a renewal to the deadline a grant already has) propagates
// nothing; so the tail is [PUBLISH <prefix>:wake:sync "", WAIT N timeout]:
// the PUBLISH always propagates (standalone and Sentinel) and reaches no
// subscriber (no client id is "sync"), and the WAIT after it counts every
// write the server made before it, on any connection: the pipeline's own
// scripts, or a grant a release script wrote elsewhere (a handoff). On a
// cluster neither PUBLISH nor SPUBLISH enters the replication stream (they
// travel by the cluster bus, PUBLISH to every node): the channel is empty
// there and the tail is the WAIT alone, which counts the connection's own
// last write (a grantee's confirmation renews its grant: a write, after the
// handoff it confirms, but within the millisecond of the handoff).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "net/connection.h"
#include "net/reply.h"

namespace fairlock::detail {

struct SyncWait {
  int replicas = 0;                      // 0: nothing asked (no tail)
  std::chrono::milliseconds timeout{0};  // the WAIT's, > 0 when replicas > 0
  std::string channel;                   // the PUBLISH's: wake_channel(prefix, "sync"); none on a cluster
};

// One WAIT for calls that ask for `a` and `b`: the most replicas, within
// the shorter timeout (a call that asks nothing leaves the other as it is).
inline SyncWait stricter(SyncWait a, const SyncWait& b) {
  if (b.replicas == 0) return a;
  if (a.replicas == 0) return b;
  a.replicas = std::max(a.replicas, b.replicas);
  a.timeout = std::min(a.timeout, b.timeout);
  return a;
}

// The tail's commands; they refer to its own strings (neither copied nor moved).
class SyncTail {
 public:
  explicit SyncTail(const SyncWait& wait);
  SyncTail(const SyncTail&) = delete;
  SyncTail& operator=(const SyncTail&) = delete;
  const std::vector<Argv>& commands() const { return commands_; }
  // The replicas that acknowledged, from the replies of a pipeline that ended
  // with commands(); an error reply (e.g. NOPERM: the user may not WAIT) is
  // thrown typed.
  int acks(const std::vector<ReplyPtr>& replies) const;

 private:
  std::string channel_, replicas_, timeout_;
  std::vector<Argv> commands_;
};

}  // namespace fairlock::detail
