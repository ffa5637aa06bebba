#pragma once
// Script calls of many claims, collected and then sent together: one
// pipelined round trip per server (in chunks), each call's reply handed to
// its own continuation. The async driver's way to ask Redis for thousands
// of waiters without a round trip each.
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "node/sync_wait.h"
#include "protocol/scripts.h"

struct redisReply;

namespace fairlock::detail {

class Server;

class ScriptBatch {
 public:
  // Gets the call's reply (an error reply in place), or, with a null reply,
  // the error that failed its whole round trip.
  using OnReply = std::function<void(const redisReply* reply, const std::exception_ptr& error)>;

  void add(Server& server, ScriptCall call, OnReply on_reply);
  // A call whose writes must reach `sync.replicas` replicas: its round trip
  // ends with the sync tail (node/sync_wait.h; one for all such calls in it,
  // with the shortest timeout asked), and its continuation also gets what
  // WAIT answered. A WAIT refused fails the synced calls only.
  using OnSynced = std::function<void(const redisReply* reply, int acks, const std::exception_ptr& error)>;
  void add_synced(Server& server, ScriptCall call, const SyncWait& sync, OnSynced on_reply);
  bool empty() const { return by_server_.empty(); }
  // Sends everything and runs every continuation, in the order added per
  // server; the batch is empty afterwards.
  void run();

 private:
  struct Pending {
    ScriptCall call;
    OnReply on_reply;
    SyncWait sync{};  // add_synced's (replicas 0: add's)
    OnSynced on_synced{};
  };
  static std::optional<SyncWait> tail_of(const std::vector<Pending>& pending, std::size_t from, std::size_t to);
  static void run_chunk(Server& server, std::vector<Pending>& pending, std::size_t from, std::size_t to);
  std::map<Server*, std::vector<Pending>> by_server_;
};

}  // namespace fairlock::detail
