#pragma once
// Replies as hiredis's reader builds them: ownership, typed accessors and
// the mapping of error replies to the library's errors. Nothing outside src/
// sees a hiredis type.
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

// Throws the typed error for an error reply (ServerError, PermitsMismatch).
[[noreturn]] void throw_reply_error(const redisReply& r, std::string_view context);
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
