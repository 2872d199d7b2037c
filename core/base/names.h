// Names that enter gpuvpa's state (Kubernetes object names, cost centers, action ids) are
// checked here once, at input, so that nothing stored can later fail to encode (a protobuf
// `string` must be UTF-8) or be read two ways (an id whose parts contain its separator).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace gpuvpa {

// Kubernetes name rules (apimachinery validation): a DNS-1123 label (namespace, container:
// at most 63 of [a-z0-9-], starting and ending alphanumeric) and a DNS-1123 subdomain
// (workload and pod names: at most 253, labels joined by '.').
bool IsDns1123Label(std::string_view name);
bool IsDns1123Subdomain(std::string_view name);
// An owner kind such as Deployment: [A-Za-z][A-Za-z0-9]*, at most 63.
bool IsKindName(std::string_view kind);
bool IsValidUtf8(std::string_view text);
// Valid UTF-8 without control characters (C0 and DEL): text that shows safely in a table, a
// CSV or a terminal.
bool IsDisplayableText(std::string_view text);
// `text` made safe to store and show (a message from a peer: an API error page, a server's
// answer): bytes that are not UTF-8 become '?', control characters a space, and it is cut at
// a character boundary to at most `max_bytes`.
std::string SanitizeText(std::string_view text, size_t max_bytes);

// `field` "value" is not a valid <what>: errors that name the field and the value.
Status ValidateNamespaceName(std::string_view field, std::string_view value);
Status ValidateObjectName(std::string_view field, std::string_view value);
Status ValidateContainerName(std::string_view field, std::string_view value);
Status ValidateKind(std::string_view field, std::string_view value);
// An installation's name on ledger rows: a DNS-1123 label.
Status ValidateClusterName(std::string_view field, std::string_view value);
// Free text that is stored and shown (cost centers): valid UTF-8, no control characters,
// 1..253 bytes.
Status ValidateLabelText(std::string_view field, std::string_view value);
// `value` quoted for an error message: cut after 80 bytes, control and non-ASCII bytes as \xNN.
std::string QuoteForError(std::string_view value);
// A number for a message: up to 10 significant digits, no trailing zeros ("%.10g").
std::string FormatNumber(double value);
// `value` with `digits` decimals ("%.*f").
std::string FormatFixed(double value, int digits);

// Joins parts into one id that reads back unambiguously: each part is percent-escaped ('%',
// '/', ':' and bytes outside printable ASCII become %XX) and the parts are joined by '/'.
std::string EncodeIdParts(std::initializer_list<std::string_view> parts);
std::string EscapeIdPart(std::string_view part);

}  // namespace gpuvpa
