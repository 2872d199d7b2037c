// CRC-32C against the standard check value.
#include "core/base/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace gpuvpa {
namespace {

TEST(Crc32cTest, MatchesStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cPortableForTest("123456789"), 0xE3069283u);
  // RFC 3720 B.4: 32 bytes of zeros.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32cPortableForTest(std::string(32, '\0')), 0x8A9136AAu);
}

// The hardware path (where the CPU has it) and the portable one agree at every length and
// alignment, and a value continues across pieces.
TEST(Crc32cTest, HardwareAndPortablePathsAgreeAtEveryLengthAndOffset) {
  std::string data(4099, '\0');
  uint32_t x = 12345;
  for (char& c : data) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  for (size_t offset = 0; offset < 9; ++offset)
    for (size_t len : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 63u, 64u, 1000u, 4090u}) {
      const std::string_view piece(data.data() + offset, len);
      EXPECT_EQ(Crc32c(piece), Crc32cPortableForTest(piece)) << offset << " " << len;
    }
  const std::string_view all(data);
  EXPECT_EQ(Crc32c(all.substr(1000), Crc32c(all.substr(0, 1000))), Crc32c(all));
}

TEST(Crc32cTest, DetectsEverySingleBitFlipOfAShortMessage) {
  std::string msg = "gpuvpa checkpoint payload";
  const uint32_t good = Crc32c(msg);
  for (size_t i = 0; i < msg.size() * 8; ++i) {
    std::string flipped = msg;
    flipped[i / 8] = static_cast<char>(flipped[i / 8] ^ (1 << (i % 8)));
    EXPECT_NE(Crc32c(flipped), good) << "bit " << i;
  }
}

}  // namespace
}  // namespace gpuvpa
