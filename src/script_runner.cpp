#include "script_runner.h"

#include <algorithm>
#include <thread>

#include "fairlock/errors.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

Argv call_argv(const ScriptCall& call, ScriptWay way) {
  Argv argv;
  argv.reserve(8 + call.args.size());
  if (way == ScriptWay::functions) {
    argv.push_back("FCALL");
    argv.push_back(script_function(call.script));
  } else {
    argv.push_back("EVALSHA");
    argv.push_back(script_sha(call.script));
  }
  argv.push_back("5");
  argv.push_back(call.keys->q);
  argv.push_back(call.keys->w);
  argv.push_back(call.keys->h);
  argv.push_back(call.keys->g);
  argv.push_back(call.keys->seq);
  for (const auto& a : call.args) argv.push_back(a);
  return argv;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The server lacks the script or the library: the call did not run.
bool is_missing(std::string_view error) {
  return starts_with(error, "NOSCRIPT") || starts_with(error, "ERR Function not found");
}

// The server has no functions (before Redis 7), or the user may not use
// `command` ("fcall", "function|load"): the call or load did not run.
bool is_unavailable(std::string_view error, std::string_view command) {
  if (starts_with(error, "ERR unknown command") || starts_with(error, "ERR unknown subcommand")) return true;
  return starts_with(error, "NOPERM") && error.find("'" + std::string(command) + "'") != std::string::npos;
}

}  // namespace

ScriptRunner::ScriptRunner(ScriptWay way, std::function<void()> on_reload,
                           std::function<void(const std::string&)> on_fallback)
    : way_(way), on_reload_(std::move(on_reload)), on_fallback_(std::move(on_fallback)) {}

std::vector<ReplyPtr> ScriptRunner::run(Connection& c, const std::vector<ScriptCall>& calls, milliseconds budget) {
  std::vector<Argv> batch;
  batch.reserve(calls.size());
  const ScriptWay way = way_.load();
  for (const auto& call : calls) batch.push_back(call_argv(call, way));
  std::vector<ReplyPtr> replies = c.pipeline(batch);
  const auto give_up_at = steady_clock::now() + budget;
  milliseconds backoff(0);
  // Load and re-run the calls that did not run. The server may lose the
  // scripts again meanwhile: retry, with a short backoff, within the budget.
  for (auto missing = not_run(replies); !missing.empty(); missing = not_run(replies)) {
    if (steady_clock::now() >= give_up_at) {
      throw ScriptsFlushed("fairlock: the server kept losing fairlock's scripts (FUNCTION or SCRIPT FLUSH)");
    }
    std::this_thread::sleep_for(backoff);  // none before the first reload
    backoff = std::clamp(backoff * 2, milliseconds(1), milliseconds(50));
    if (on_reload_) on_reload_();
    std::vector<ReplyPtr> again = load_and_run(c, calls, missing);
    for (std::size_t j = 0; j < missing.size(); ++j) replies[missing[j]] = std::move(again[j]);
  }
  return replies;
}

// The calls that did not run; a call refused FCALL itself turns this
// server to EVALSHA.
std::vector<std::size_t> ScriptRunner::not_run(const std::vector<ReplyPtr>& replies) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!is_error(*replies[i])) continue;
    const std::string_view error = reply_error(*replies[i]);
    if (is_unavailable(error, "fcall")) {
      fall_back(std::string(error));
    } else if (!is_missing(error)) {
      continue;
    }
    out.push_back(i);
  }
  return out;
}

// The library (or every script the calls use), then those calls, in one
// pipeline: nothing of ours comes between a load and its call.
std::vector<ReplyPtr> ScriptRunner::load_and_run(Connection& c, const std::vector<ScriptCall>& calls,
                                                 const std::vector<std::size_t>& which) {
  const ScriptWay way = way_.load();
  std::vector<Argv> commands;
  if (way == ScriptWay::functions) {
    commands.push_back(Argv{"FUNCTION", "LOAD", library_source()});
  } else {
    for (Script s : kAllScripts) {
      const bool used = std::any_of(which.begin(), which.end(), [&](std::size_t i) { return calls[i].script == s; });
      if (used) commands.push_back(Argv{"SCRIPT", "LOAD", script_source(s)});
    }
  }
  const std::size_t loads = commands.size();
  for (std::size_t i : which) commands.push_back(call_argv(calls[i], way));
  std::vector<ReplyPtr> replies = c.pipeline(commands);
  for (std::size_t i = 0; i < loads; ++i) {
    if (!is_error(*replies[i])) continue;
    const std::string_view error = reply_error(*replies[i]);
    if (way == ScriptWay::functions && error.find("already exists") != std::string::npos) continue;  // a peer's load
    if (way == ScriptWay::functions && is_unavailable(error, "function|load")) {
      fall_back(std::string(error));  // the calls found no function: they are re-run by EVALSHA
      continue;
    }
    throw_reply_error(*replies[i], way == ScriptWay::functions ? "FUNCTION LOAD" : "SCRIPT LOAD");
  }
  replies.erase(replies.begin(), replies.begin() + static_cast<std::ptrdiff_t>(loads));
  return replies;
}

void ScriptRunner::fall_back(const std::string& why) {
  if (way_.exchange(ScriptWay::evalsha) == ScriptWay::evalsha) return;
  if (on_fallback_) on_fallback_(why);
}

}  // namespace fairlock::detail
