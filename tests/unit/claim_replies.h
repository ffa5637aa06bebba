#pragma once
// What the claim unit tests feed the Claim state machine: a start time, the
// wait context of a client with signals, and the parsed replies of the
// scripts (protocol/calls.h) built by hand.
#include <chrono>
#include <cstdint>

#include "core/claim.h"

namespace fairlock::test {

using detail::Acquired;
using detail::BeatResult;
using detail::CancelResult;
using detail::Claim;
using detail::Effects;
using detail::SteadyTime;
using detail::Step;
using namespace std::chrono_literals;

inline const SteadyTime t0{std::chrono::hours(1)};
inline const detail::WaitContext kSignals{false, true, 1000ms};

inline Acquired queued(std::uint64_t ticket, long long position) {
  Acquired a;
  a.status = Acquired::Status::queued;
  a.ticket = ticket;
  a.position = position;
  return a;
}

// A cancel that found the member granted, for `remaining` more.
inline CancelResult handed_off(std::uint64_t fence, std::chrono::milliseconds remaining = 3000ms) {
  CancelResult c;
  c.status = CancelResult::Status::granted;
  c.fence = fence;
  c.remaining_ms = remaining.count();
  return c;
}

inline Acquired granted(std::uint64_t fence, std::chrono::milliseconds remaining) {
  Acquired a;
  a.status = Acquired::Status::granted;
  a.fence = fence;
  a.remaining_ms = remaining.count();
  return a;
}

// `acks`: what the WAIT after the heartbeat answered (-1: none was sent).
inline BeatResult beat_result(BeatResult::Status status, long long value, long long ms = -1, int acks = -1) {
  BeatResult r;
  r.status = status;
  r.value = value;
  r.ms = ms;
  r.acks = acks;
  return r;
}

}  // namespace fairlock::test
