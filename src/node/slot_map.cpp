#include "node/slot_map.h"

#include "fairlock/errors.h"
#include "net/reply.h"
#include "protocol/slot.h"

namespace fairlock::detail {

namespace {

[[noreturn]] void malformed() { throw ServerError("redis: CLUSTER SLOTS answered an unexpected reply"); }

std::uint16_t slot_at(const redisReply& r) {
  const long long slot = reply_integer(r);
  if (slot < 0 || slot >= kSlotCount) malformed();
  return static_cast<std::uint16_t>(slot);
}

// One element: [first, last, [host, port, id, ...], replicas...].
SlotRange range_of(const redisReply& e, const std::string& asked_host) {
  if (!is_array(e) || reply_size(e) < 3) malformed();
  const redisReply& master = reply_at(e, 2);
  if (!is_array(master) || reply_size(master) < 2) malformed();
  std::string host(reply_string(reply_at(master, 0)));
  if (host.empty() || host == "?") host = asked_host;
  const long long port = reply_integer(reply_at(master, 1));
  if (port < 1 || port > 65535) malformed();
  return SlotRange{slot_at(reply_at(e, 0)), slot_at(reply_at(e, 1)), std::move(host), static_cast<int>(port)};
}

}  // namespace

std::vector<SlotRange> parse_cluster_slots(const redisReply& reply, const std::string& asked_host) {
  if (is_error(reply)) throw_reply_error(reply, "CLUSTER SLOTS");
  if (!is_array(reply)) malformed();
  std::vector<SlotRange> ranges;
  ranges.reserve(reply_size(reply));
  for (std::size_t i = 0; i < reply_size(reply); ++i) ranges.push_back(range_of(reply_at(reply, i), asked_host));
  return ranges;
}

}  // namespace fairlock::detail
