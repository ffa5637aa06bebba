#pragma once
// Opening a connection to a target: its fixed server, or, through Sentinel,
// the master the sentinels name now, confirmed by ROLE.
#include <memory>

#include "net/connection.h"

namespace fairlock::detail {

// Throws what Connection's constructor throws, and (through Sentinel) what
// MasterLocator::locate throws. Through Sentinel, up to 3 addresses named
// are tried (one that refuses or is not master is passed over when the
// sentinels are asked again); when none served, the refusal of one that
// refused, else NotMaster (a failover under way).
std::unique_ptr<Connection> open_connection(const Target& t);

// ROLE's first element is "master"; a server that refuses ROLE (an ACL
// without it) is taken at its word: a demoted one answers writes with
// -READONLY.
bool answers_as_master(Connection& c);

// Through Sentinel, a connection opened before the master last changed
// (MasterLocator::generation) is not used again.
bool outdated(const Target& t, const Connection& c);

}  // namespace fairlock::detail
