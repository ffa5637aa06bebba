#include "net/open_connection.h"

#include <exception>
#include <vector>

#include "net/master_locator.h"
#include "net/reply.h"

namespace fairlock::detail {

namespace {

// How many named addresses one opening tries: a sentinel that still names
// the old master, then one that names the new one.
constexpr int kAddressesTried = 3;

// A named address that cannot be reached (a stale sentinel naming a dead
// master) or is not master is skipped, and the sentinels asked again.
std::unique_ptr<Connection> open_master(const Target& t) {
  MasterLocator& locator = *t.locator;
  std::vector<Endpoint> not_master;
  std::exception_ptr unreachable;
  for (int i = 0; i < kAddressesTried; ++i) {
    Target direct = t;
    direct.locator = nullptr;
    try {
      direct.endpoint = locator.locate(t.endpoint, not_master);
    } catch (const NotConnected&) {
      if (unreachable) std::rethrow_exception(unreachable);  // every address named was tried
      throw;
    }
    try {
      auto c = std::make_unique<Connection>(direct);
      if (answers_as_master(*c)) {
        locator.confirmed(direct.endpoint);
        c->set_generation(locator.generation());
        return c;
      }
    } catch (const NotConnected&) {
      unreachable = std::current_exception();
    }
    not_master.push_back(direct.endpoint);
  }
  if (unreachable) std::rethrow_exception(unreachable);
  throw NotMaster("sentinel: the servers named for '" + locator.master_name() +
                  "' are not the master (a failover under way?)");
}

}  // namespace

bool answers_as_master(Connection& c) {
  ReplyPtr r = c.command({"ROLE"});
  if (is_error(*r)) return true;
  return is_array(*r) && reply_size(*r) > 0 && reply_string(reply_at(*r, 0)) == "master";
}

std::unique_ptr<Connection> open_connection(const Target& t) {
  return t.locator ? open_master(t) : std::make_unique<Connection>(t);
}

bool outdated(const Target& t, const Connection& c) { return t.locator && c.generation() != t.locator->generation(); }

}  // namespace fairlock::detail
