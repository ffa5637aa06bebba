#include "protocol/slot.h"

namespace fairlock::detail {

namespace {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection.
std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (const char ch : data) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(ch) << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000U) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021U)
                                 : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

// The part of the key that is hashed: its tag if it has a non-empty one.
std::string_view hashed_part(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

}  // namespace

std::uint16_t key_slot(std::string_view key) { return crc16(hashed_part(key)) % kSlotCount; }

}  // namespace fairlock::detail
