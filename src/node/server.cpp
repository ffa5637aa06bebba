#include "node/server.h"

#include <spdlog/spdlog.h>

#include "fairlock/errors.h"
#include "net/call_deadline.h"

namespace fairlock::detail {

Server::Server(Target target, const ServerConfig& config, Counters& counters, spdlog::logger& log)
    : target_(std::move(target)),
      counters_(counters),
      registration_(config.who_key, config.who_value, config.who_expiry),
      eviction_(target_.endpoint.where(), config.allow_evicting, log),
      scripts_(
          config.way, [this] { counters_.add(&Stats::script_reloads); },
          [this, &log](const std::string& why) {
            log.warn("fairlock: {}: running the scripts by EVALSHA, not as functions ({})", target_.endpoint.where(),
                     why);
          }),
      commands_(target_, config.pool_size, counters, log, [this](Connection& c) { eviction_.check(c); }),
      heartbeat_(target_, 1, counters, log, [this](Connection& c) { eviction_.check(c); }) {}

bool Server::open() {
  try {
    return commands_.with([this](Connection& c) {
      registration_.write(c);
      return true;
    });
  } catch (const Error& e) {
    if (is_setup_error(e)) throw;
    // The first call reports it, and checks the connection it opens; the
    // first heartbeat round writes the registration.
    return false;
  }
}

void Server::unregister() noexcept {
  const std::optional<Argv> del = registration_.removal();
  if (!del) return;
  try {
    // A stalled server holds shutdown no longer than this: the key expires anyway.
    const CallDeadline bound(std::chrono::steady_clock::now() + kUnregisterBound);
    commands_.with([&](Connection& c) { return c.command(*del); });
  } catch (const std::exception&) {  // it expires by itself
  }
}

ReplyPtr Server::run_one(ScriptCall call) {
  std::vector<ScriptCall> calls;  // (not {call}: an initializer list copies its arguments)
  calls.push_back(std::move(call));
  return std::move(run_batch(calls, Lane::commands).front());
}

std::vector<ReplyPtr> Server::run_batch(const std::vector<ScriptCall>& calls, Lane lane,
                                        const std::vector<Argv>& tail) {
  const auto run = [&](Connection& c) { return run_riding(c, calls, tail); };
  return lane == Lane::heartbeat ? heartbeat_.with(run) : commands_.with(run);
}

// Script calls, with the registration's SET last in their pipeline when due:
// a heartbeat round's, or (a client idle longer than the registration's
// expiry runs no heartbeat) the first calls after the idle time.
std::vector<ReplyPtr> Server::run_riding(Connection& c, const std::vector<ScriptCall>& calls,
                                         const std::vector<Argv>& tail) {
  const auto now = std::chrono::steady_clock::now();
  const std::optional<Argv> refresh = registration_.due(now);
  if (!refresh) return scripts_.run(c, calls, target_.command_timeout, tail);
  std::vector<Argv> with_refresh = tail;
  with_refresh.push_back(*refresh);
  std::vector<ReplyPtr> replies = scripts_.run(c, calls, target_.command_timeout, with_refresh);
  registration_.written(*replies.back(), now);
  replies.pop_back();
  return replies;
}

ReplyPtr Server::command(const Argv& argv) {
  ReplyPtr r = commands_.with([&](Connection& c) { return c.command(argv); });
  if (is_error(*r)) throw_reply_error(*r, argv.empty() ? "redis" : argv.front());
  return r;
}

std::vector<ReplyPtr> Server::pipeline(const std::vector<Argv>& commands) {
  return commands_.with([&](Connection& c) { return c.pipeline(commands); });
}

std::unique_ptr<Connection> Server::connect() const { return std::make_unique<Connection>(target_); }

}  // namespace fairlock::detail
