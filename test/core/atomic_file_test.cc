// Atomic file replacement.
#include "core/base/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test/support/temp_dir.h"

namespace gpuvpa {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  testing::ScopedTempDir tmp_;
  const std::filesystem::path& dir_ = tmp_.dir();
};

TEST_F(AtomicFileTest, ReplacesContentsAndLeavesNoTemporaryFile) {
  const std::string path = (dir_ / "f").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer").ok());
  Result<std::string> read = ReadWholeFile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "second, longer");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

TEST_F(AtomicFileTest, ReadingAMissingFileIsNotFound) {
  Result<std::string> read = ReadWholeFile((dir_ / "missing").string());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
}

TEST_F(AtomicFileTest, WritingIntoAMissingDirectoryFailsWithThePath) {
  const std::string path = (dir_ / "no-such-dir" / "f").string();
  Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no-such-dir"), std::string::npos) << s.message();
}

TEST(ReadFilePrefixTest, ReadsAtMostTheBytesAskedFor) {
  testing::ScopedTempDir dir;
  const std::string path = dir.Path("f");
  const std::string text(200000, 'x');
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  EXPECT_EQ(ReadFilePrefix(path, 70000)->size(), 70000u);
  EXPECT_EQ(ReadFilePrefix(path, 1 << 20)->size(), 200000u);
  EXPECT_EQ(*ReadWholeFile(path), text);
  EXPECT_EQ(ReadFilePrefix(dir.Path("missing"), 10).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuvpa
