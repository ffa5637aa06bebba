#pragma once
// Every retry and backoff constant of the library, with why it has its value.
#include <chrono>

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

}  // namespace fairlock::detail::retry
