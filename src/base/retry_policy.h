#pragma once
// Every retry and backoff constant of the library, with why it has its value.
#include <chrono>

#include "fairlock/options.h"

namespace fairlock::detail::retry {

using std::chrono::milliseconds;

// A failed acquire is asked again after this, doubling per failure in a
// row: short enough that a restarted server or a killed connection costs a
// waiter little, long enough not to hammer a server that is struggling.
inline constexpr milliseconds kFirstBackoff{20};
// ... up to this: a waiter polls a failing server at most twice a second.
inline constexpr milliseconds kMaxBackoff{500};
// The cancel call at a wait's deadline gets this long to answer (a healthy
// server answers in well under a millisecond); after it, the wait times out
// at once and its leave is settled in the background, so a stalled server
// never makes a caller wait past its deadline by more than this.
inline constexpr milliseconds kGiveUpGrace{100};
// A round of the async thread's calls gets at least this long, whatever
// deadline bounds it: a call sent must have time for its reply (a give-up
// sent late in its grace would otherwise leave the round's other calls a
// fraction of a round trip); it adds at most this much to such a give-up.
inline constexpr milliseconds kRoundFloor{20};

// A script the server lost (restart, FLUSH, failover) is reloaded and its
// call re-run at once, then after 1 ms doubling up to this while the
// server keeps losing them (node/script_runner.cpp, within command_timeout):
// a flush is a moment, and a reload costs the server a compile.
inline constexpr milliseconds kReloadBackoffMax{50};
// The wake subscriber reconnects after this, doubling per failure up to
// kResubscribeMax (node/wake.cpp): waiters poll meanwhile, so a slow return
// costs latency, never a grant; a server that is down, or drops the
// connection at once (maxclients), is not hammered: the backoff starts again
// only after a session that lasted kResubscribeMax, or a move to a new master.
inline constexpr milliseconds kResubscribeFirst{50};
inline constexpr milliseconds kResubscribeMax{2000};
// A wait for a free pooled connection looks at a deadline that may have
// moved nearer (a cancel) this often, and only while every connection is
// taken (net/pool.cpp): nothing else can tell that wait.
inline constexpr milliseconds kDeadlineCheck{50};
// A TLS handshake that got no reply for this long asks the port whether
// plain Redis answers there (rediss:// to a plain port, net/tls_stream.cpp):
// a healthy TLS server answers a ClientHello in a millisecond or two; a
// slower one only costs the probe, one extra connection.
inline constexpr milliseconds kPlainProbeAfter{200};
// With Options::sync_replicas, the shortest WAIT sent (WAIT 0 would block
// for ever): a grant handed over at a wait's deadline still gets one.
inline constexpr milliseconds kMinSyncWait{10};
// A WAIT's timeout is honoured at the server's next cron tick (hz 10: up
// to 100 ms late). A timed wait's WAIT is sent this much shorter than what
// is left to its deadline (core/claim.cpp sync_for), so that its answer
// comes by the deadline, and the wait's calls are cut there as any other's.
inline constexpr milliseconds kSyncTick{100};
// A call that WAITs for a timed wait ends by its deadline plus this, at the
// latest (Claim::call_by): the WAIT a grant gets at the deadline (when
// replicas acknowledge, WAIT answers at once; a WAIT cut here found none),
// and an answer that came a little late. The rest of kGiveUpGrace is the
// leave's that follows (the release of a grant not acknowledged), so that
// the wait ends by its deadline plus kGiveUpGrace whatever the server does.
inline constexpr milliseconds kSyncPastDeadline{kGiveUpGrace / 2};
// Calls that WAIT for no caller's deadline (a heartbeat round that renews a
// holder, and the check that sync_timeout fits in command_timeout): the
// tick and a margin for the reply, before such a call is cut as stalled.
// Nobody waits on a heartbeat round but the renewals it carries, which a
// round cut too early would fail. Public (fairlock run's bounds count it).
inline constexpr milliseconds kSyncSlack = limits::kSyncSlack;
// (Not a constant: a release whose connection broke is tried once more on a
// fresh one, api/participant.cpp release_member; more would not tell a lost
// grant from a release that ran. If that fails too, the caller is told
// Released::failed and the release is asked again in the background, backing
// off from kFirstBackoff to kMaxBackoff, until the grant's lease would end:
// api/release_retry.h.)

}  // namespace fairlock::detail::retry
