// POSIX implementation of atomic file replacement, and the file readers beside it.
#include "core/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/base/names.h"

namespace gpuvpa {
namespace {

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write " + path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

Status FsyncDirectoryOf(const std::string& path) {
  // Built in one expression: assigning "." to the string afterwards trips GCC 12's -Wrestrict
  // false positive at -O3 (the Release build).
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory " + dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? OkStatus() : ErrnoError("fsync directory " + dir, err);
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("create " + tmp, errno);
  Status st = WriteAll(fd, contents, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoError("fsync " + tmp, errno);
  if (::close(fd) != 0 && st.ok()) st = ErrnoError("close " + tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = ErrnoError("rename to " + path, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncDirectoryOf(path);
}

Result<std::string> ReadWholeFile(const std::string& path) {
  return ReadFilePrefix(path, std::numeric_limits<size_t>::max());
}

Result<std::string> ReadFilePrefix(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no such file: " + path);
    return ErrnoError("open " + path, errno);
  }
  std::string out;
  struct stat sb {};
  if (::fstat(fd, &sb) == 0 && sb.st_size > 0)
    out.reserve(std::min(static_cast<size_t>(sb.st_size), max_bytes));
  char buf[1 << 16];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, max_bytes - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError("read " + path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

bool FileExists(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) == 0;
}

Result<std::string> ReadFirstLine(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) return NotFoundError(std::string(what) + " " + QuoteForError(path) + " cannot be read");
  std::string line;
  std::getline(in, line);
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return InvalidArgumentError(std::string(what) + " " + QuoteForError(path) + " is empty");
  return line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace gpuvpa
