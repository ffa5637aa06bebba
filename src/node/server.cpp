#include "node/server.h"

#include <spdlog/spdlog.h>

#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "net/master_locator.h"
#include "net/open_connection.h"
#include "protocol/slot.h"

namespace fairlock::detail {

Server::Server(Target target, const ServerConfig& config, Counters& counters, spdlog::logger& log)
    : target_(std::move(target)),
      redirects_(config.redirects),
      who_slot_(key_slot(config.who_key)),
      counters_(counters),
      registration_(config.who_key, config.who_value, config.who_expiry),
      eviction_(where(), config.allow_evicting, log),
      scripts_(
          config.way, [this] { counters_.add(&Stats::script_reloads); },
          [this, &log](const std::string& why) {
            log.warn("fairlock: {}: running the scripts by EVALSHA, not as functions ({})", where(), why);
          }),
      commands_(target_, config.pool_size, counters, log, [this](Connection& c) { eviction_.check(c); }),
      heartbeat_(target_, 1, counters, log, [this](Connection& c) { eviction_.check(c); }) {}

std::string Server::where() const {
  return target_.locator ? "the master of '" + target_.locator->master_name() + "'" : target_.endpoint.where();
}

void Server::start_following() {
  if (target_.locator) target_.locator->follow(target_);
}

void Server::stop_following() noexcept {
  if (target_.locator) target_.locator->stop_following();
}

bool Server::reached() const noexcept {
  return commands_.reached() || heartbeat_.reached() || (target_.locator && target_.locator->named()) ||
         (redirects_ != nullptr && redirects_->mapped());
}

bool Server::open() {
  try {
    return commands_.with([this](Connection& c) {
      if (registers_here()) registration_.write(c);
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

// On a cluster, the registration goes to its slot's master alone.
bool Server::registers_here() { return redirects_ == nullptr || redirects_->serves(*this, who_slot_); }

std::vector<ReplyPtr> Server::run_batch(const std::vector<ScriptCall>& calls, Lane lane,
                                        const std::vector<Argv>& tail) {
  if (redirects_ == nullptr) return run_here(calls, lane, tail, false);
  return follow(calls, lane, tail, run_noted(calls, lane, tail, false), kMaxRedirects);
}

// run_here, on a server of a cluster: one found unreachable (or cut off)
// has the map read again soon (it may have failed over).
std::vector<ReplyPtr> Server::run_noted(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                                        bool asking) {
  try {
    return run_here(calls, lane, tail, asking);
  } catch (const ConnectionError&) {
    redirects_->unreachable(*this);
    throw;
  }
}

// `asking`: the calls go after ASKING, on the same connection (an -ASK's
// one call at the importing node; not on the heartbeat lane).
std::vector<ReplyPtr> Server::run_here(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                                       bool asking) {
  const auto run = [&](Connection& c) {
    if (asking) c.command({"ASKING"});
    return master_only(c, run_riding(c, calls, tail));
  };
  return lane == Lane::heartbeat && !asking ? heartbeat_.with(run) : commands_.with(run);
}

// A lone call redirected is sent on (an -ASK once, after ASKING: its reply
// is final); every -MOVED teaches the cluster router the slot's owner.
std::vector<ReplyPtr> Server::follow(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                                     std::vector<ReplyPtr> replies, int hops) {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::optional<Redirect> to = redirect_of(*replies[i]);
    if (!to) continue;
    if (calls.size() != 1 || hops == 0) {
      if (to->kind == Redirect::Kind::moved) redirects_->moved(*to, *this);
      continue;
    }
    if (to->kind == Redirect::Kind::ask) return redirects_->asked(*to, *this).run_noted(calls, lane, tail, true);
    Server& owner = redirects_->moved(*to, *this);
    return owner.follow(calls, lane, tail, owner.run_noted(calls, lane, tail, false), hops - 1);
  }
  return replies;
}

// Script calls, with the registration's SET last in their pipeline when due:
// a heartbeat round's, or (a client idle longer than the registration's
// expiry runs no heartbeat) the first calls after the idle time.
std::vector<ReplyPtr> Server::run_riding(Connection& c, const std::vector<ScriptCall>& calls,
                                         const std::vector<Argv>& tail) {
  const auto now = std::chrono::steady_clock::now();
  // (is_due first: on a cluster, registers_here() takes the router's lock)
  const std::optional<Argv> refresh =
      registration_.is_due(now) && registers_here() ? registration_.due(now) : std::nullopt;
  if (!refresh) return scripts_.run(c, calls, target_.command_timeout, tail);
  std::vector<Argv> with_refresh = tail;
  with_refresh.push_back(*refresh);
  std::vector<ReplyPtr> replies = scripts_.run(c, calls, target_.command_timeout, with_refresh);
  registration_.written(*replies.back(), now);
  replies.pop_back();
  return replies;
}

void Server::keep_registered() noexcept {
  if (!registration_.is_due(std::chrono::steady_clock::now()) || !registers_here()) return;
  try {
    heartbeat_.with([this](Connection& c) {
      registration_.write(c);
      return true;
    });
  } catch (const std::exception&) {  // the next round tries again
  }
}

ReplyPtr Server::command(const Argv& argv) {
  ReplyPtr r = commands_.with([&](Connection& c) {
    std::vector<ReplyPtr> one;
    one.push_back(c.command(argv));
    return std::move(master_only(c, std::move(one)).front());
  });
  if (is_error(*r)) throw_reply_error(*r, argv.empty() ? "redis" : argv.front());
  return r;
}

std::vector<ReplyPtr> Server::pipeline(const std::vector<Argv>& commands) {
  return commands_.with([&](Connection& c) { return master_only(c, c.pipeline(commands)); });
}

// Replies of a master. One -READONLY means this server was demoted (a
// failover): no write ran (none ran on a replica), the connection is not
// used again, and NotMaster (nothing ran) has the call asked again, of the
// master the sentinels name then.
std::vector<ReplyPtr> Server::master_only(Connection& c, std::vector<ReplyPtr> replies) {
  for (const ReplyPtr& r : replies) {
    if (!is_error(*r) || server_refusal(reply_error(*r)) != ServerRefusal::readonly) continue;
    c.discard();
    if (target_.locator) target_.locator->demoted();
    throw NotMaster("redis: " + where() + " answered READONLY (demoted by a failover): asking for the master again");
  }
  return replies;
}

std::unique_ptr<Connection> Server::connect() const { return open_connection(target_); }

}  // namespace fairlock::detail
