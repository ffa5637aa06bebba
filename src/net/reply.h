#pragma once
// Replies as hiredis's reader builds them: ownership, typed accessors and
// the mapping of Redis's error replies to the library's errors (the
// scripts' own error codes are protocol/script_errors.h's). Nothing outside
// src/ sees a hiredis type.
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

struct redisReply;

namespace fairlock::detail {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// Throws the typed error for an error reply (ConnectionError for a server
// refusal below, AccessDenied, else ServerError).
[[noreturn]] void throw_reply_error(const redisReply& r, std::string_view context);

// An error reply's code: its first word ("READONLY", "MOVED", "ERR").
std::string_view error_code(std::string_view error);
// What Redis says by an error reply's code when it did not run a command
// because of its own state, not the command: readonly (a replica, or a
// master demoted by a failover), moved and ask (Cluster redirections), busy
// (it cannot serve now: see reply.cpp); none for any other. The one
// classification of these conditions: throw_reply_error, the master check
// (node/server.cpp) and the redirections (node/redirect.cpp) all read it.
enum class ServerRefusal { none, busy, readonly, moved, ask };
ServerRefusal server_refusal(std::string_view error);
// Accessors that throw ServerError("unexpected reply ...") on a type mismatch.
bool is_error(const redisReply& r);
bool is_array(const redisReply& r);
bool is_nil(const redisReply& r);
// The text of an error reply ("" for any other reply).
std::string_view reply_error(const redisReply& r);
std::string_view reply_string(const redisReply& r);
long long reply_integer(const redisReply& r);
// An integer, or a string that is one in full; nullopt for anything else.
std::optional<long long> reply_integer_if(const redisReply& r);
std::size_t reply_size(const redisReply& r);
const redisReply& reply_at(const redisReply& r, std::size_t i);

}  // namespace fairlock::detail
