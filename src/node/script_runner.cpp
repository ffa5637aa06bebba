#include "node/script_runner.h"

#include <algorithm>
#include <iterator>
#include <thread>

#include "base/retry_policy.h"
#include "fairlock/errors.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The server has no such command (before Redis 7, or renamed away), or the
// user may not run `command` ("fcall", "function|load").
bool is_unavailable(std::string_view error, std::string_view command) {
  if (starts_with(error, "ERR unknown command") || starts_with(error, "ERR unknown subcommand")) return true;
  return starts_with(error, "NOPERM") && error.find("'" + std::string(command) + "'") != std::string_view::npos;
}

}  // namespace

CallError classify_call_error(std::string_view error, ScriptWay sent) {
  if (sent == ScriptWay::evalsha) return starts_with(error, "NOSCRIPT") ? CallError::missing : CallError::other;
  if (starts_with(error, "ERR Function not found")) return CallError::missing;
  return is_unavailable(error, "fcall") ? CallError::no_functions : CallError::other;
}

LoadError classify_load_error(std::string_view error) {
  if (starts_with(error, "ERR Library '") && error.find("' already exists") != std::string_view::npos) {
    return LoadError::loaded_by_peer;
  }
  return is_unavailable(error, "function|load") ? LoadError::no_functions : LoadError::other;
}

ScriptRunner::ScriptRunner(ScriptWay way, std::function<void()> on_reload,
                           std::function<void(const std::string&)> on_fallback)
    : way_(way), on_reload_(std::move(on_reload)), on_fallback_(std::move(on_fallback)) {}

std::vector<ReplyPtr> ScriptRunner::run(Connection& c, const std::vector<ScriptCall>& calls, milliseconds budget,
                                        const std::vector<Argv>& tail) {
  if (!tail.empty() && !seen_loaded_.load()) {
    std::vector<ReplyPtr> replies = run(c, calls, budget);
    for (auto& r : c.pipeline(tail)) replies.push_back(std::move(r));
    return replies;
  }
  const ScriptWay way = way_.load();  // once: the batch and what it records as sent agree
  Batch b{calls, {}, std::vector<ScriptWay>(calls.size(), way), way};
  std::vector<Argv> argv;
  argv.reserve(calls.size() + tail.size());
  for (const auto& call : calls) argv.push_back(script_command(call, b.way));
  argv.insert(argv.end(), tail.begin(), tail.end());
  b.replies = c.pipeline(argv);
  std::vector<ReplyPtr> tail_replies(
      std::make_move_iterator(b.replies.begin() + static_cast<std::ptrdiff_t>(calls.size())),
      std::make_move_iterator(b.replies.end()));
  b.replies.resize(calls.size());
  const auto give_up_at = steady_clock::now() + budget;
  milliseconds backoff(0);
  bool rerun = false;
  // Load and re-run the calls that did not run. The server may lose the
  // scripts again meanwhile: retry, with a short backoff, within the budget.
  for (auto missing = not_run(b); !missing.empty(); missing = not_run(b)) {
    rerun = true;
    if (steady_clock::now() >= give_up_at) {
      throw ScriptsFlushed("fairlock: the server kept losing fairlock's scripts (FUNCTION or SCRIPT FLUSH)");
    }
    std::this_thread::sleep_for(backoff);  // none before the first reload
    backoff = std::clamp(backoff * 2, milliseconds(1), retry::kReloadBackoffMax);
    if (on_reload_) on_reload_();
    load_and_run(c, b, missing);
  }
  seen_loaded_ = true;
  if (rerun && !tail.empty()) tail_replies = c.pipeline(tail);
  for (auto& r : tail_replies) b.replies.push_back(std::move(r));
  return std::move(b.replies);
}

// The calls that did not run; an FCALL refused as such turns this server
// to EVALSHA.
std::vector<std::size_t> ScriptRunner::not_run(Batch& b) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < b.replies.size(); ++i) {
    if (!is_error(*b.replies[i])) continue;
    const std::string_view error = reply_error(*b.replies[i]);
    const CallError kind = classify_call_error(error, b.sent[i]);
    if (kind == CallError::other) continue;
    if (kind == CallError::no_functions) {
      fall_back(std::string(error));
      b.way = ScriptWay::evalsha;
    }
    out.push_back(i);
  }
  return out;
}

// The library (or, by EVALSHA, all six scripts), then those calls, in one
// pipeline: nothing of ours comes between a load and its call. A library
// the server refuses for another reason (over maxmemory: FUNCTION LOAD is a
// write; a read-only replica) leaves this batch to EVALSHA, whose SCRIPT
// LOAD is not a write.
void ScriptRunner::load_and_run(Connection& c, Batch& b, const std::vector<std::size_t>& which) {
  if (way_.load() == ScriptWay::evalsha) b.way = ScriptWay::evalsha;  // another thread fell back meanwhile
  const ScriptWay way = b.way;
  std::vector<Argv> commands;
  if (way == ScriptWay::functions) {
    commands.push_back(Argv{"FUNCTION", "LOAD", library_source()});
  } else {  // every script: the cache was flushed for all of them, and the next call needs another
    for (Script s : kAllScripts) commands.push_back(Argv{"SCRIPT", "LOAD", script_source(s)});
  }
  const std::size_t loads = commands.size();
  for (std::size_t i : which) commands.push_back(script_command(b.calls[i], way));
  std::vector<ReplyPtr> replies = c.pipeline(commands);
  for (std::size_t i = 0; i < loads; ++i) {
    if (!is_error(*replies[i])) continue;
    if (way == ScriptWay::evalsha) throw_reply_error(*replies[i], "SCRIPT LOAD");
    const std::string_view error = reply_error(*replies[i]);
    const LoadError kind = classify_load_error(error);
    if (kind == LoadError::no_functions) fall_back(std::string(error));
    if (kind != LoadError::loaded_by_peer) b.way = ScriptWay::evalsha;  // the calls that found no function
  }
  for (std::size_t j = 0; j < which.size(); ++j) {
    b.replies[which[j]] = std::move(replies[loads + j]);
    b.sent[which[j]] = way;
  }
}

void ScriptRunner::fall_back(const std::string& why) {
  if (way_.exchange(ScriptWay::evalsha) == ScriptWay::evalsha) return;
  if (on_fallback_) on_fallback_(why);
}

}  // namespace fairlock::detail
