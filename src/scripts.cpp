#include "scripts.h"

#include <hiredis/hiredis.h>

#include <stdexcept>

#include "fairlock_lua.h"

namespace fairlock::detail {

std::string_view script_source(Script s) {
  switch (s) {
    case Script::acquire: return lua::acquire_source;
    case Script::release: return lua::release_source;
    case Script::cancel: return lua::cancel_source;
    case Script::heartbeat: return lua::heartbeat_source;
    case Script::inspect: return lua::inspect_source;
    case Script::evict: return lua::evict_source;
  }
  return {};
}

std::string_view script_sha(Script s) {
  switch (s) {
    case Script::acquire: return lua::acquire_sha;
    case Script::release: return lua::release_sha;
    case Script::cancel: return lua::cancel_sha;
    case Script::heartbeat: return lua::heartbeat_sha;
    case Script::inspect: return lua::inspect_sha;
    case Script::evict: return lua::evict_sha;
  }
  return {};
}

const char* script_name(Script s) {
  switch (s) {
    case Script::acquire: return "acquire";
    case Script::release: return "release";
    case Script::cancel: return "cancel";
    case Script::heartbeat: return "heartbeat";
    case Script::inspect: return "inspect";
    case Script::evict: return "evict";
  }
  return "?";
}

Keys::Keys(std::string_view prefix, std::string_view name) {
  if (name.empty()) throw std::invalid_argument("name: must not be empty");
  if (name.size() > kMaxNameBytes) {
    throw std::invalid_argument("name: longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  if (name.find_first_of("{}") != std::string_view::npos) {
    throw std::invalid_argument("name: must not contain '{' or '}' (they would break the hash tag)");
  }
  std::string base;
  base.reserve(prefix.size() + name.size() + 8);
  base.append(prefix).append(":{").append(name).append("}:");
  q = base + "q";
  w = base + "w";
  h = base + "h";
  g = base + "g";
  seq = base + "seq";
}

namespace {

Argv evalsha_argv(const ScriptCall& call) {
  Argv argv;
  argv.reserve(8 + call.args.size());
  argv.push_back("EVALSHA");
  argv.push_back(script_sha(call.script));
  argv.push_back("5");
  argv.push_back(call.keys->q);
  argv.push_back(call.keys->w);
  argv.push_back(call.keys->h);
  argv.push_back(call.keys->g);
  argv.push_back(call.keys->seq);
  for (const auto& a : call.args) argv.push_back(a);
  return argv;
}

bool is_noscript(const redisReply& r) {
  return r.type == REDIS_REPLY_ERROR && std::string_view(r.str, r.len).rfind("NOSCRIPT", 0) == 0;
}

}  // namespace

std::vector<ReplyPtr> run_scripts(Connection& c, const std::vector<ScriptCall>& calls,
                                  std::atomic<std::uint64_t>& reloads) {
  std::vector<Argv> batch;
  batch.reserve(calls.size());
  for (const auto& call : calls) batch.push_back(evalsha_argv(call));
  std::vector<ReplyPtr> replies = c.pipeline(batch);
  bool missing = false;
  for (const auto& r : replies) missing = missing || is_noscript(*r);
  if (!missing) return replies;

  // The server lost its script cache (restart, SCRIPT FLUSH, failover):
  // load every script once and re-run the calls that failed (only
  // those: the others already ran).
  reloads.fetch_add(1, std::memory_order_relaxed);
  std::vector<Argv> loads;
  for (Script s :
       {Script::acquire, Script::release, Script::cancel, Script::heartbeat, Script::inspect, Script::evict}) {
    loads.push_back(Argv{"SCRIPT", "LOAD", script_source(s)});
  }
  for (const auto& r : c.pipeline(loads)) {
    if (is_error(*r)) throw_reply_error(*r, "SCRIPT LOAD");
  }
  std::vector<Argv> retry;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (is_noscript(*replies[i])) retry.push_back(batch[i]);
  }
  std::vector<ReplyPtr> again = c.pipeline(retry);
  for (std::size_t i = 0, j = 0; i < replies.size(); ++i) {
    if (is_noscript(*replies[i])) replies[i] = std::move(again[j++]);
  }
  return replies;
}

}  // namespace fairlock::detail
