// Crash-safe file replacement: a reader sees either the old contents or the new, never a mix.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

// Writes `contents` to a temporary file beside `path`, fsyncs it, renames it over `path` and
// fsyncs the directory, so the replacement survives a crash or power loss at any point.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Reads a whole file. NOT_FOUND when it does not exist.
Result<std::string> ReadWholeFile(const std::string& path);
// At most the first `max_bytes` bytes (all of a shorter file): enough to tell a format apart
// without holding the whole file.
Result<std::string> ReadFilePrefix(const std::string& path, size_t max_bytes);

// The one value a small file holds (a URL or a token from a mounted Secret): its first line
// without surrounding spaces, tabs or line end. NOT_FOUND ("<what> \"<path>\" cannot be read")
// or INVALID_ARGUMENT ("... is empty"); the value itself is never in an error.
Result<std::string> ReadFirstLine(const std::string& path, std::string_view what);

bool FileExists(const std::string& path);

}  // namespace gpuvpa
