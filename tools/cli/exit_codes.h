// Exit statuses of the `fairlock` command (documented in the usage text and docs/COMMAND.md).
#pragma once

namespace fairlock::cli {

constexpr int kNotFound = 1;       // evict: no such holder or waiter (or not a token)
constexpr int kUsage = 64;         // bad command line
constexpr int kUnavailable = 69;   // Redis unreachable
constexpr int kSoftware = 70;      // any other error
constexpr int kConflict = 75;      // no turn: --wait/-w ran out, -n found it busy (-E chooses)
constexpr int kLost = 76;          // the hold was lost while the command ran
constexpr int kAccessDenied = 77;  // wrong user/password, ACL right missing
constexpr int kConfig = 78;        // a TLS setup that cannot work, a server that may evict
constexpr int kEvicted = 79;       // evicted by an operator while waiting
constexpr int kSignalBase = 128;   // + N: signal N ended the wait (or the command)

}  // namespace fairlock::cli
