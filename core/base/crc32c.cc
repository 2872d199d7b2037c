// Table-driven CRC-32C; portable (no SSE4.2 requirement), fast enough for checkpoint files.
#include "core/base/crc32c.h"

#include <array>

namespace gpuvpa {
namespace {

constexpr uint32_t kCastagnoliReversed = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReversed : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  crc = ~crc;
  for (unsigned char byte : data) crc = kTable[(crc ^ byte) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace gpuvpa
