// Temporary directories for tests.
#include "test/support/temp_dir.h"

#include <unistd.h>

#include <atomic>

namespace gpuvpa::testing {

ScopedTempDir::ScopedTempDir() {
  static std::atomic<int> counter{0};
  dir_ = std::filesystem::temp_directory_path() /
         ("gpuvpa-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace gpuvpa::testing
