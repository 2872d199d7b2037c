// Name validation and unambiguous ids.
#include "core/base/names.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace gpuvpa {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxSubdomain = 253;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Status Invalid(std::string_view field, std::string_view value, std::string_view rule) {
  return InvalidArgumentError(std::string(field) + " " + QuoteForError(value) + " is not " +
                              std::string(rule));
}

}  // namespace

std::string FormatNumber(double value) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.10g", value);
  return buf;
}

std::string FormatFixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string QuoteForError(std::string_view value) {
  // Shown in errors: cut very long values and make control bytes visible.
  std::string out = "\"";
  for (size_t i = 0; i < value.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f || c >= 0x80) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > 80) out += "...(" + std::to_string(value.size()) + " bytes)";
  return out + "\"";
}

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabel) return false;
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s)
    if (!IsLowerAlnum(c) && c != '-') return false;
  return true;
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxSubdomain) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    // Subdomain labels follow the label rule but not its length limit.
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label)
      if (!IsLowerAlnum(c) && c != '-') return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsKindName(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabel) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(s.front())) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

namespace {

// The length of the UTF-8 sequence that starts at s[i], or 0 when none does.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) {
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n >= s.size()) return 0;  // truncated sequence
  for (size_t k = 1; k <= n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n + 1;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool IsDisplayableText(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return IsValidUtf8(text);
}

std::string SanitizeText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceAt(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    const std::string_view piece =
        n == 0 ? std::string_view("?")
               : (n == 1 && (c < 0x20 || c == 0x7f) ? " " : text.substr(i, n));
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    i += n == 0 ? 1 : n;
  }
  return out;
}

namespace {

// Namespaces and containers share the DNS-1123 label rule; only the noun in the error differs.
Status ValidateLabelName(std::string_view field, std::string_view value, std::string_view noun) {
  if (IsDns1123Label(value)) return OkStatus();
  return Invalid(field, value,
                 "a Kubernetes " + std::string(noun) +
                     " name (at most 63 of a-z, 0-9, '-', alphanumeric at both ends)");
}

}  // namespace

Status ValidateNamespaceName(std::string_view field, std::string_view value) {
  return ValidateLabelName(field, value, "namespace");
}

Status ValidateObjectName(std::string_view field, std::string_view value) {
  if (IsDns1123Subdomain(value)) return OkStatus();
  return Invalid(field, value,
                 "a Kubernetes object name (at most 253 of a-z, 0-9, '-', '.', alphanumeric at "
                 "both ends of each '.'-part)");
}

Status ValidateClusterName(std::string_view field, std::string_view value) {
  if (IsDns1123Label(value)) return OkStatus();
  return Invalid(field, value,
                 "a cluster name (a DNS-1123 label: at most 63 of a-z, 0-9, '-', alphanumeric "
                 "at both ends)");
}

Status ValidateContainerName(std::string_view field, std::string_view value) {
  return ValidateLabelName(field, value, "container");
}

Status ValidateKind(std::string_view field, std::string_view value) {
  if (IsKindName(value)) return OkStatus();
  return Invalid(field, value, "a Kubernetes kind (a letter, then letters or digits; at most 63)");
}

Status ValidateLabelText(std::string_view field, std::string_view value) {
  if (value.empty() || value.size() > kMaxSubdomain)
    return Invalid(field, value, "1 to 253 bytes long");
  if (!IsValidUtf8(value)) return Invalid(field, value, "valid UTF-8");
  if (!IsDisplayableText(value)) return Invalid(field, value, "free of control characters");
  return OkStatus();
}

std::string EscapeIdPart(std::string_view part) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(part.size());
  for (char ch : part) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '%' || c == '/' || c == ':' || c <= 0x20 || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string EncodeIdParts(std::initializer_list<std::string_view> parts) {
  std::string out;
  bool first = true;
  for (std::string_view p : parts) {
    if (!first) out += '/';
    first = false;
    out += EscapeIdPart(p);
  }
  return out;
}

}  // namespace gpuvpa
