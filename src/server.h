#pragma once
// One Redis server: its command pool, its heartbeat connection and dedicated
// connections (the wake subscriber). Every Redis access goes through here.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "connection.h"
#include "counters.h"
#include "pool.h"
#include "protocol.h"
#include "script_runner.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

// Which connections a call uses: the heartbeat has its own, so that waits
// that fill the command pool never delay it.
enum class Lane { commands, heartbeat };

class Server {
 public:
  Server(Target target, std::size_t pool_size, ScriptWay way, Counters& counters, spdlog::logger& log);

  // One script call; an error reply is thrown typed (ServerError, ...).
  ReplyPtr run(Script s, const Keys& keys, std::vector<std::string> args);
  // One script call; an error reply is returned in place.
  ReplyPtr run_one(ScriptCall call);
  // Script calls in one round trip; error replies are left in place.
  std::vector<ReplyPtr> run_batch(const std::vector<ScriptCall>& calls, Lane lane);
  // A plain command; an error reply is thrown typed.
  ReplyPtr command(const Argv& argv);
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands);
  // A connection of its own (the subscriber's).
  std::unique_ptr<Connection> connect() const;
  const Endpoint& endpoint() const { return target_.endpoint; }

 private:
  const Target target_;
  Counters& counters_;
  ScriptRunner scripts_;
  Pool commands_;
  Pool heartbeat_;
};

}  // namespace fairlock::detail
