// CRC-32C (Castagnoli), used to detect corrupt stored files before they are parsed.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuvpa {

// `crc` continues an earlier value: Crc32c(b, Crc32c(a)) == Crc32c(a + b).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);
// The portable path alone (the one CPUs without SSE4.2 take), for the tests that compare them.
uint32_t Crc32cPortableForTest(std::string_view data, uint32_t crc = 0);

}  // namespace gpuvpa
