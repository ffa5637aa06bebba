// Exit statuses of the `fairlock` command (documented in the usage text and the README).
#pragma once

namespace fairlock::cli {

constexpr int kUsage = 64;        // bad command line
constexpr int kUnavailable = 69;  // Redis unreachable
constexpr int kSoftware = 70;     // any other error
constexpr int kWaitTimeout = 75;  // --wait ran out before the turn came
constexpr int kLost = 76;         // the grant was lost while the command ran
constexpr int kNotFound = 1;      // evict: no such token
constexpr int kConfig = 78;       // a TLS setup that cannot work, a server that may evict

}  // namespace fairlock::cli
