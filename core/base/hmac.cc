// HMAC-SHA-256 through OpenSSL.
#include "core/base/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/base/atomic_file.h"

namespace gpuvpa {
namespace {

// A key shorter than the hash gives less than the hash's strength (RFC 2104, section 3).
constexpr size_t kMinKeyBytes = 32;

}  // namespace

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
  unsigned char tag[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), tag, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[tag[i] >> 4];
    hex += kHex[tag[i] & 15];
  }
  return hex;
}

bool HmacSha256Verifies(std::string_view key, std::string_view data, std::string_view tag_hex) {
  const std::string expected = HmacSha256Hex(key, data);
  return tag_hex.size() == expected.size() &&
         CRYPTO_memcmp(expected.data(), tag_hex.data(), expected.size()) == 0;
}

Result<std::string> RandomBytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1)
    return InternalError("the random generator failed");
  return out;
}

Result<std::string> ReadKeyFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok())
    return Status(text.status().code(), "key file " + path + ": " + text.status().message());
  std::string key = *text;
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' '))
    key.pop_back();
  if (key.size() < kMinKeyBytes)
    return InvalidArgumentError("key file " + path + ": holds " + std::to_string(key.size()) +
                                " bytes, at least " + std::to_string(kMinKeyBytes) + " are needed");
  return key;
}

}  // namespace gpuvpa
