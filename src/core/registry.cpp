#include "core/registry.h"

#include <algorithm>

namespace fairlock::detail {

using std::chrono::milliseconds;

bool Registry::enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, milliseconds lease) {
  std::lock_guard<std::mutex> lk(mu_);
  const milliseconds before = period_locked();
  auto [it, fresh] = entries_.try_emplace(member, Entry{m, lease.count()});
  if (!fresh) return false;
  leases_.insert(lease.count());
  return period_locked() < before;
}

void Registry::delist(const std::string& member) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = entries_.find(member);
  if (it != entries_.end()) erase(it);
}

void Registry::erase(std::map<std::string, Entry>::iterator it) {
  leases_.erase(leases_.find(it->second.lease_ms));
  entries_.erase(it);
}

milliseconds Registry::heartbeat_period() const {
  std::lock_guard<std::mutex> lk(mu_);
  return period_locked();
}

milliseconds Registry::period_locked() const {
  long long base = liveness_.count();
  if (!leases_.empty()) base = std::min(base, *leases_.begin());
  return milliseconds(std::max(10LL, base / 3));
}

std::vector<std::shared_ptr<SessionMember>> Registry::members() {
  std::vector<std::shared_ptr<SessionMember>> out;
  std::lock_guard<std::mutex> lk(mu_);
  out.reserve(entries_.size());
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (auto m = it->second.member.lock()) {
      out.push_back(std::move(m));
    } else {
      erase(it);
    }
    it = next;
  }
  return out;
}

void Registry::learned(const std::string& name, std::uint64_t ticket) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lk(mu_);
  auto [it, fresh] = learned_.try_emplace(name, Learned{ticket, now});
  if (!fresh) it->second = Learned{std::max(it->second.ticket, ticket), now};
}

std::map<std::string, std::uint64_t> Registry::floors() {
  const auto now = std::chrono::steady_clock::now();
  std::set<std::string> busy;  // names with claims
  for (const auto& m : members()) busy.insert(m->name());
  std::map<std::string, std::uint64_t> out;
  std::lock_guard<std::mutex> lk(mu_);
  for (auto it = learned_.begin(); it != learned_.end();) {
    if (busy.count(it->first) > 0) it->second.seen = now;
    if (now - it->second.seen > liveness_) {
      it = learned_.erase(it);
    } else {
      out.emplace(it->first, it->second.ticket);
      ++it;
    }
  }
  return out;
}

std::shared_ptr<SessionMember> Registry::find(const std::string& member) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = entries_.find(member);
  return it == entries_.end() ? nullptr : it->second.member.lock();
}

}  // namespace fairlock::detail
