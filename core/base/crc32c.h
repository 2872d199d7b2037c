// CRC-32C (Castagnoli), used to detect corrupt stored files before they are parsed.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuvpa {

uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

}  // namespace gpuvpa
