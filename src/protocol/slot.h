#pragma once
// Which Redis Cluster hash slot a key lives in: CRC16 (XMODEM) of its hash
// tag, the part between the first '{' and the next '}' when not empty,
// else of the whole key, modulo 16384 (the Redis Cluster specification).
// Every key of a name shares the tag {name}: a name lives in one slot.
#include <cstdint>
#include <string_view>

#include "protocol/keys.h"

namespace fairlock::detail {

constexpr std::uint16_t kSlotCount = 16384;

std::uint16_t key_slot(std::string_view key);
inline std::uint16_t slot_of(const Keys& keys) { return key_slot(keys.q); }

}  // namespace fairlock::detail
