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
  std::vector<ReplyPtr> replies;
  std::exception_ptr error;
  try {
    replies = server.run_batch(calls, Lane::commands);
  } catch (...) {
    error = std::current_exception();
  }
  for (std::size_t i = from; i < to; ++i) {
    pending[i].on_reply(error ? nullptr : replies[i - from].get(), error);
  }
}

}  // namespace fairlock::detail
