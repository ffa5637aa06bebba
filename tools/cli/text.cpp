#include "text.h"

#include <cstdio>

namespace fairlock::cli {

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string human(std::chrono::milliseconds d) {
  char buf[32];
  long long ms = d.count();
  if (ms < 0) return "expired";
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 120000) {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60000, (ms / 1000) % 60);
  }
  return buf;
}

std::string who(const std::string& host, std::int64_t pid, const std::string& description) {
  if (host.empty() && pid == 0) return "unknown client";
  std::string out = printable(host) + " pid " + std::to_string(pid);
  if (!description.empty()) out += " (" + printable(description) + ")";
  return out;
}

}  // namespace fairlock::cli
