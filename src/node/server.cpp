#include "node/server.h"

#include <spdlog/spdlog.h>

#include "fairlock/errors.h"

namespace fairlock::detail {

Server::Server(Target target, const ServerConfig& config, Counters& counters, spdlog::logger& log)
    : target_(std::move(target)),
      counters_(counters),
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
    return commands_.with([](Connection&) { return true; });
  } catch (const Error& e) {
    if (is_setup_error(e)) throw;
    return false;  // the first call reports it, and checks the connection it opens
  }
}

ReplyPtr Server::run_one(ScriptCall call) {
  std::vector<ScriptCall> calls;  // (not {call}: an initializer list copies its arguments)
  calls.push_back(std::move(call));
  return std::move(run_batch(calls, Lane::commands).front());
}

std::vector<ReplyPtr> Server::run_batch(const std::vector<ScriptCall>& calls, Lane lane) {
  Pool& pool = lane == Lane::heartbeat ? heartbeat_ : commands_;
  return pool.with([&](Connection& c) { return scripts_.run(c, calls, target_.command_timeout); });
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
