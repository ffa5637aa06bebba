// A Claim (core/claim.h) once granted: its release, a cancel, the
// shutdown, and what the session's threads tell it (heartbeat replies,
// wake signals, kicks).
#include <algorithm>
#include <string>

#include "core/claim.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

// ---------------------------------------------------------------- a grant

ReleasePlan Claim::begin_release() {
  ReleasePlan plan;
  if (state_ == State::idle || waiting()) return plan;
  plan.member = wait_.member;
  plan.queued_first = wait_.ticket != 0;
  if (state_ == State::shut_down) {
    plan.kind = ReleasePlan::Kind::released_at_shutdown;
  } else {
    plan.kind = ReleasePlan::Kind::release;
    if (state_ == State::lost) plan.lost_reason = grant_.lost_reason;
  }
  state_ = State::idle;
  return plan;
}

std::optional<std::string> Claim::on_shutdown() {
  if (waiting()) {
    wait_.cancelled = true;
  } else if (state_ == State::held) {
    state_ = State::shut_down;
    return wait_.member;
  }
  return std::nullopt;
}

bool Claim::cancel() {
  if (!waiting()) return false;
  wait_.cancelled = true;
  return true;
}

std::string Claim::mark_lost(std::string why) {
  state_ = State::lost;
  grant_.lost_reason = why;
  counters_.add(&Stats::lost);
  return why;
}

// ---------------------------------------------------------------- the session's events

SessionMember::Beat Claim::renewal(milliseconds lease) const {
  return SessionMember::Beat{wait_.member, lease, true, lease.count() > 0 ? cfg_.sync : SyncWait{}};
}

std::optional<SessionMember::Beat> Claim::beat_item(SteadyTime now, Effects& effects) {
  if (state_ == State::confirming && now >= grant_.valid_until) {
    lose_unconfirmed();
    effects.wake = true;
  }
  if (state_ == State::waiting) return SessionMember::Beat{wait_.member, cfg_.lease, false};
  // Kept alive while confirmed (its confirm calls WAIT, not this renewal).
  if (state_ == State::confirming) return SessionMember::Beat{wait_.member, cfg_.lease, true};
  if (state_ != State::held) return std::nullopt;
  if (now >= grant_.valid_until) {
    std::string why = cfg_.sync.replicas == 0 ? "lease ran out before a renewal succeeded"
                                              : "lease ran out before a renewal was acknowledged by " +
                                                    std::to_string(cfg_.sync.replicas) + " replica(s)";
    if (!grant_.beat_error.empty()) why += " (last heartbeat error: " + grant_.beat_error + ")";
    effects.lost = mark_lost(why);
    return std::nullopt;
  }
  if (cfg_.auto_renew || !grant_.lease_confirmed) return renewal(cfg_.lease);
  // Not renewed, but checked: an eviction or a loss is learned within one
  // heartbeat interval.
  return renewal(milliseconds(0));
}

Effects Claim::on_beat(const std::string& member, bool sent_as_holder, std::chrono::milliseconds sent_lease,
                       BeatResult result, SteadyTime sent_at) {
  Effects fx;
  if (member != wait_.member) return fx;
  grant_.beat_error.clear();
  if (state_ == State::waiting) {
    fx.wake = true;
    if (result.status == BeatResult::Status::waiting) {
      wait_.refreshed_at = std::max(wait_.refreshed_at, sent_at);
      if (wait_.position != result.value) fx.position = static_cast<std::size_t>(std::max(0LL, result.value));
      wait_.position = result.value;
      note_next_expiry(result.ms, sent_at);
    } else if (result.status == BeatResult::Status::holding && !wait_.signalled && result.value > 0) {
      wait_.signalled = true;
      wait_.signal_fence = static_cast<std::uint64_t>(result.value);
      grant_.lease_confirmed = true;  // a waiter's beat carries its lease: it renewed the grant
      grant_.valid_until = server_deadline(sent_at, result.ms);
      counters_.add(&Stats::wakes_heartbeat);
    } else if (result.status == BeatResult::Status::gone) {
      wait_.kicked = true;  // our entry expired: acquire again (joins at the tail)
    } else if (result.status == BeatResult::Status::evicted) {
      on_evicted();
    }
  } else if (state_ == State::confirming) {
    on_beat_confirming(result, sent_as_holder, sent_at, fx);
  } else if (state_ == State::held) {
    if (result.status == BeatResult::Status::holding && static_cast<std::uint64_t>(result.value) == grant_.fence) {
      // What the holder believes (owns(), and the loss it reports when this
      // runs out): without sync_replicas, the deadline of the last renewal
      // the master answered, which a failover to a replica that missed it
      // takes back (the grant then ends earlier than believed, by up to a
      // lease: docs/TOPOLOGIES.md). With it, only the deadline of a
      // renewal that WAIT found on sync_replicas replicas.
      if (acknowledged(result.acks)) {
        grant_.valid_until = std::max(grant_.valid_until, server_deadline(sent_at, result.ms));
      }
      if (sent_lease.count() > 0) grant_.lease_confirmed = true;
    } else if (sent_as_holder) {  // a beat sent while we still waited says nothing about the grant
      fx.lost =
          mark_lost(result.status == BeatResult::Status::evicted ? "an operator evicted the grant (Client::evict)"
                                                                 : "the grant is gone from Redis (expired or evicted)");
    }
  }
  return fx;
}

// A grant being confirmed: a renewal keeps it alive (what its holder will
// believe is only what a confirm's WAIT covers); gone, nobody held it.
void Claim::on_beat_confirming(const BeatResult& result, bool sent_as_holder, SteadyTime sent_at, Effects& fx) {
  if (result.status == BeatResult::Status::holding && static_cast<std::uint64_t>(result.value) == grant_.fence) {
    grant_.valid_until = std::max(grant_.valid_until, server_deadline(sent_at, result.ms));
  } else if (sent_as_holder) {
    fx.wake = true;
    if (result.status == BeatResult::Status::evicted) {
      state_ = State::waiting;
      on_evicted();
    } else {
      lose_unconfirmed();
    }
  }
}

void Claim::on_beat_error(const std::string& member, const std::string& error) {
  if (member == wait_.member) grant_.beat_error = error;
}

bool Claim::on_signal(const std::string& member, std::uint64_t fence) {
  if (member != wait_.member || state_ != State::waiting || wait_.signalled) return false;
  wait_.signalled = true;
  wait_.signal_fence = fence;
  counters_.add(&Stats::wakes_signal);  // before the waiter runs on
  return true;
}

bool Claim::kick() {
  if (state_ != State::waiting) return false;
  wait_.kicked = true;
  return true;
}

std::optional<std::uint64_t> Claim::waiting_ticket() const {
  if (state_ == State::waiting && !wait_.kicked && !wait_.signalled && wait_.ticket != 0) return wait_.ticket;
  return std::nullopt;
}

}  // namespace fairlock::detail
