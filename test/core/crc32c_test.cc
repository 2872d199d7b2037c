// CRC-32C against the standard check value.
#include "core/base/crc32c.h"

#include <gtest/gtest.h>

namespace gpuvpa {
namespace {

TEST(Crc32cTest, MatchesStandardCheckValue) { EXPECT_EQ(Crc32c("123456789"), 0xE3069283u); }

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
