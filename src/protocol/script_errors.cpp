#include "protocol/script_errors.h"

#include <algorithm>
#include <string>
#include <utility>

#include "fairlock/errors.h"
#include "net/reply.h"

namespace fairlock::detail {

namespace {

// A script's "FLBADARG <argument> <problem>" as the caller's argument: the
// scripts check what the C++ side checks too, so this is a value that got
// past it (a token given to Client::evict, a limit to inspect).
[[noreturn]] void throw_bad_argument(const std::string& text) {
  static const std::pair<std::string_view, const char*> kOptions[] = {
      {"member", "token"},
      {"permits", "permits"},
      {"lease_ms", "LockOptions::lease"},
      {"liveness_ms", "Options::liveness_ttl"},
      {"limit", "max_waiters"},
  };
  const std::string_view argument = std::string_view{text}.substr(0, text.find(' '));
  for (const auto& [word, option] : kOptions) {
    if (argument == word) throw BadOption(option, text.substr(std::min(text.size(), word.size() + 1)));
  }
  throw BadOption("argument", text);
}

}  // namespace

void throw_script_error(const redisReply& r, std::string_view context) {
  const std::string msg(reply_error(r));
  const std::string where(context);
  auto starts = [&](std::string_view prefix) { return msg.rfind(prefix, 0) == 0; };
  if (starts("FLPERMITS ")) {
    throw PermitsMismatch(where + ": permits mismatch: this name is in use with " + msg.substr(10) + " permit(s)");
  }
  if (starts("FLBADARG ")) throw_bad_argument(msg.substr(9));
  if (starts("FLVERSION ")) {
    throw ProtocolMismatch(where + ": protocol mismatch: version " + msg.substr(10));
  }
  throw_reply_error(r, context);
}

}  // namespace fairlock::detail
