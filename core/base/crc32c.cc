// CRC-32C: the SSE4.2 crc32 instruction where the CPU has it (checked at run time; the build
// targets baseline x86-64), else a portable table, 8 bytes per step. Both give the same value.
#include "core/base/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define GPUVPA_CRC32C_SSE42 1
#endif

namespace gpuvpa {
namespace {

constexpr uint32_t kCastagnoliReversed = 0x82F63B78u;

// kTables[k][b]: the CRC of byte b followed by k zero bytes (slicing by 8).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReversed : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
  return t;
}

constexpr auto kTables = MakeTables();

uint32_t Crc32cPortable(const unsigned char* p, size_t n, uint32_t crc) {
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian x86/ARM: the bytes in order
    word ^= crc;
    crc = kTables[7][word & 0xFF] ^ kTables[6][(word >> 8) & 0xFF] ^
          kTables[5][(word >> 16) & 0xFF] ^ kTables[4][(word >> 24) & 0xFF] ^
          kTables[3][(word >> 32) & 0xFF] ^ kTables[2][(word >> 40) & 0xFF] ^
          kTables[1][(word >> 48) & 0xFF] ^ kTables[0][word >> 56];
  }
  for (; n > 0; ++p, --n) crc = kTables[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
  return crc;
}

#ifdef GPUVPA_CRC32C_SSE42
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const unsigned char* p, size_t n,
                                                       uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
#ifdef GPUVPA_CRC32C_SSE42
  if (HasSse42()) return ~Crc32cSse42(p, data.size(), ~crc);
#endif
  return ~Crc32cPortable(p, data.size(), ~crc);
}

uint32_t Crc32cPortableForTest(std::string_view data, uint32_t crc) {
  return ~Crc32cPortable(reinterpret_cast<const unsigned char*>(data.data()), data.size(), ~crc);
}

}  // namespace gpuvpa
