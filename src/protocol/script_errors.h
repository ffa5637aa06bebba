#pragma once
// The scripts' error replies (lua/lib.lua's fail, docs/PROTOCOL.md): their
// FL codes as the library's typed errors. The only code that knows them.
#include <string_view>

struct redisReply;

namespace fairlock::detail {

// Throws the typed error of an error reply to a script call: FLPERMITS as
// PermitsMismatch, FLBADARG as BadOption naming the caller's option,
// FLVERSION as ProtocolMismatch; any other as Redis's (net/reply.h).
[[noreturn]] void throw_script_error(const redisReply& r, std::string_view context);

}  // namespace fairlock::detail
