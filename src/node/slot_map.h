#pragma once
// A Redis Cluster's slot map, as CLUSTER SLOTS gives it (on 7.0 CLUSTER
// SHARDS can answer empty slot ranges after a failover: redis #13414).
#include <cstdint>
#include <string>
#include <vector>

struct redisReply;

namespace fairlock::detail {

// Slots first..last (inclusive) are served by the master at host:port.
struct SlotRange {
  std::uint16_t first;
  std::uint16_t last;
  std::string host;
  int port;
};

// The masters' ranges in CLUSTER SLOTS's reply; a master whose host is
// empty or "?" (a node that does not know its address) is `asked_host`,
// the node that answered. Throws ServerError for a reply of another shape.
std::vector<SlotRange> parse_cluster_slots(const redisReply& reply, const std::string& asked_host);

}  // namespace fairlock::detail
