#include "print.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "text.h"

namespace fairlock::cli {
namespace {

// A member's registration as JSON fields (empty and 0 when it registered none).
template <typename Member>
std::string who_json(const Member& m) {
  return ",\"client_id\":" + json_string(m.client_id) + ",\"host\":" + json_string(m.host) +
         ",\"pid\":" + std::to_string(m.pid) + ",\"description\":" + json_string(m.description);
}

}  // namespace

void print_table(const fairlock::QueueState& st, std::ostream& out) {
  out << "name " << printable(st.name) << "  permits " << st.permits << "  holders " << st.holder_count << "  waiters "
      << st.waiter_count << "  last fence " << st.last_fence << "\n";
  char line[256];
  if (!st.holders.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s  ", "HOLDER", "TOKEN", "FENCE", "HELD", "LEASE LEFT");
    out << line << "WHO\n";
    for (const auto& h : st.holders) {
      std::snprintf(line, sizeof line, "  %-8s %-50s %18llu %9s %11s  ", "", printable(h.token).c_str(),
                    static_cast<unsigned long long>(h.fence), human(h.held).c_str(), human(h.lease_left).c_str());
      out << line << who(h.host, h.pid, h.description) << "\n";
    }
  }
  if (!st.waiters.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s  ", "WAITER", "TOKEN", "TICKET", "WAITED",
                  "LIVE LEFT");
    out << line << "WHO\n";
    for (const auto& w : st.waiters) {
      std::snprintf(line, sizeof line, "  #%-7zu %-50s %18llu %9s %11s  ", w.position, printable(w.token).c_str(),
                    static_cast<unsigned long long>(w.ticket), human(w.waited).c_str(), human(w.liveness_left).c_str());
      out << line << who(w.host, w.pid, w.description) << "\n";
    }
    if (st.waiter_count > st.waiters.size()) out << "  ... and " << st.waiter_count - st.waiters.size() << " more\n";
  }
  if (st.holders.empty() && st.waiters.empty()) out << "  (idle)\n";
}

void print_json(const fairlock::QueueState& st, std::ostream& out) {
  out << "{\"name\":" << json_string(st.name) << ",\"permits\":" << st.permits << ",\"last_fence\":" << st.last_fence
      << ",\"holder_count\":" << st.holder_count << ",\"waiter_count\":" << st.waiter_count
      << ",\"server_time_ms\":" << st.server_time_ms << ",\"holders\":[";
  for (std::size_t i = 0; i < st.holders.size(); ++i) {
    const auto& h = st.holders[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(h.token) << ",\"fence\":" << h.fence
        << ",\"held_ms\":" << h.held.count() << ",\"lease_left_ms\":" << h.lease_left.count() << who_json(h) << "}";
  }
  out << "],\"waiters\":[";
  for (std::size_t i = 0; i < st.waiters.size(); ++i) {
    const auto& w = st.waiters[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(w.token) << ",\"position\":" << w.position
        << ",\"ticket\":" << w.ticket << ",\"waited_ms\":" << w.waited.count()
        << ",\"liveness_left_ms\":" << w.liveness_left.count() << who_json(w) << "}";
  }
  out << "]}\n";
}

void print_list_table(const std::vector<fairlock::NameSummary>& names, std::ostream& out) {
  std::size_t width = 4;  // "NAME"
  for (const auto& n : names) width = std::max(width, printable(n.name).size());
  const std::string pad(width, ' ');
  out << "NAME" << pad.substr(4) << "  PERMITS  HOLDERS  WAITERS\n";
  char counts[64];
  for (const auto& n : names) {
    const std::string shown = printable(n.name);
    std::snprintf(counts, sizeof counts, "  %7u  %7zu  %7zu\n", n.permits, n.holders, n.waiters);
    out << shown << pad.substr(shown.size()) << counts;
  }
}

void print_list_json(const std::vector<fairlock::NameSummary>& names, std::ostream& out) {
  out << "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out << (i ? "," : "") << "{\"name\":" << json_string(names[i].name) << ",\"holders\":" << names[i].holders
        << ",\"waiters\":" << names[i].waiters << ",\"permits\":" << names[i].permits << "}";
  }
  out << "]\n";
}

}  // namespace fairlock::cli
