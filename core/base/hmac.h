// HMAC-SHA-256 (OpenSSL) for values gpuvpa stores where others can edit them (an annotation on a
// workload): a value is trusted only when its tag verifies under a key only gpuvpa holds.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

// The lowercase hex HMAC-SHA-256 of `data` under `key`.
std::string HmacSha256Hex(std::string_view key, std::string_view data);
// Whether `tag_hex` is the HMAC of `data` under `key` (compared in constant time).
bool HmacSha256Verifies(std::string_view key, std::string_view data, std::string_view tag_hex);
// `bytes` random bytes from the operating system's generator.
Result<std::string> RandomBytes(size_t bytes);
// A key from a file (a mounted Secret): its bytes, trailing whitespace removed; at least 32.
Result<std::string> ReadKeyFile(const std::string& path);

}  // namespace gpuvpa
