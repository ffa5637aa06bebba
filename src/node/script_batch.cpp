#include "node/script_batch.h"

#include <algorithm>

#include "node/server.h"

namespace fairlock::detail {

namespace {
// Calls per round trip: large enough that 10,000 waiters queue in ten round
// trips, small enough that one batch never holds a connection for long.
constexpr std::size_t kChunk = 1000;
}  // namespace

void ScriptBatch::add(Server& server, ScriptCall call, OnReply on_reply) {
  by_server_[&server].push_back(Pending{std::move(call), std::move(on_reply)});
}

void ScriptBatch::add_synced(Server& server, ScriptCall call, const SyncWait& sync, OnSynced on_reply) {
  by_server_[&server].push_back(Pending{std::move(call), {}, sync, std::move(on_reply)});
}

std::optional<SyncWait> ScriptBatch::tail_of(const std::vector<Pending>& pending, std::size_t from, std::size_t to) {
  SyncWait tail;
  for (std::size_t i = from; i < to; ++i) tail = stricter(std::move(tail), pending[i].sync);
  if (tail.replicas == 0) return std::nullopt;
  return tail;
}

void ScriptBatch::run() {
  auto batches = std::move(by_server_);
  by_server_.clear();
  for (auto& [server, pending] : batches) {
    for (std::size_t from = 0; from < pending.size(); from += kChunk) {
      run_chunk(*server, pending, from, std::min(pending.size(), from + kChunk));
    }
  }
}

void ScriptBatch::run_chunk(Server& server, std::vector<Pending>& pending, std::size_t from, std::size_t to) {
  std::vector<ScriptCall> calls;
  calls.reserve(to - from);
  for (std::size_t i = from; i < to; ++i) calls.push_back(std::move(pending[i].call));
  std::optional<SyncTail> tail;
  if (const std::optional<SyncWait> sync = tail_of(pending, from, to)) tail.emplace(*sync);
  std::vector<ReplyPtr> replies;
  std::exception_ptr error;
  try {
    replies = server.run_batch(calls, Lane::commands, tail ? tail->commands() : std::vector<Argv>{});
  } catch (...) {
    error = std::current_exception();
  }
  int acks = -1;
  std::exception_ptr sync_error = error;
  try {
    if (tail && !error) acks = tail->acks(replies);
  } catch (...) {
    sync_error = std::current_exception();
  }
  for (std::size_t i = from; i < to; ++i) {
    Pending& p = pending[i];
    if (!p.on_synced) {
      p.on_reply(error ? nullptr : replies[i - from].get(), error);
    } else {
      p.on_synced(sync_error ? nullptr : replies[i - from].get(), acks, sync_error);
    }
  }
}

}  // namespace fairlock::detail
