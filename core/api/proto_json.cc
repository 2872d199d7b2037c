// ProtoJsonWriter: protobuf's JSON form through a per-type plan. What protobuf 3.21 writes, and
// so what this writes: fields in declaration order, each `"name":value` without spaces; unset
// messages left out, every other field printed (defaults too, [] for an empty list); 64-bit
// integers quoted; doubles as printf %.15g when that reads back exactly, else %.17g (floats 6
// and 9 digits); NaN and infinities as the strings "NaN", "Infinity", "-Infinity"; strings with
// ", \ and the control characters escaped (\b \t \n \f \r short, others \u00XX), and as \uXXXX
// also <, >, DEL, C1 controls and the invisible format characters listed in kEscapedRanges;
// bytes in padded base64. proto_json_test checks each rule against protobuf's printer.
#include "core/api/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace gpuvpa {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

struct ProtoJsonWriter::Plan {
  struct Field {
    const FieldDescriptor* field;
    std::string key;            // "name":
    const Plan* sub = nullptr;  // message fields
  };
  std::vector<Field> fields;
  bool covered = true;
};

namespace {

// Code points above U+007F that protobuf's printer writes as \u escapes (read off its output
// for every code point; the C1 controls, soft hyphen, bidi and zero-width format characters,
// the byte order mark, interlinear annotations, musical formatting and language tags).
constexpr std::array<std::pair<uint32_t, uint32_t>, 17> kEscapedRanges = {{
    {0x80, 0x9F},
    {0xAD, 0xAD},
    {0x600, 0x603},
    {0x6DD, 0x6DD},
    {0x70F, 0x70F},
    {0x17B4, 0x17B5},
    {0x200B, 0x200F},
    {0x2028, 0x202E},
    {0x2060, 0x2064},
    {0x206A, 0x206F},
    {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB},
    {0x1D173, 0x1D17A},
    {0xE0001, 0xE0001},
    {0xE0020, 0xE007F},
}};

bool Escaped(uint32_t code_point) {
  for (const auto& [low, high] : kEscapedRanges)
    if (code_point >= low && code_point <= high) return true;
  return false;
}

void AppendU16Escape(uint32_t unit, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
}

void AppendCodePointEscape(uint32_t code_point, std::string& out) {
  if (code_point < 0x10000) return AppendU16Escape(code_point, out);
  code_point -= 0x10000;
  AppendU16Escape(0xD800 + (code_point >> 10), out);
  AppendU16Escape(0xDC00 + (code_point & 0x3FF), out);
}

// The code point of the UTF-8 sequence at `s[i]` and its length; 0 when it is not well formed
// (truncated, overlong, a surrogate, above U+10FFFF).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = byte(i);
  size_t length;
  uint32_t min;
  if ((lead & 0xE0) == 0xC0)
    length = 2, min = 0x80, code_point = lead & 0x1F;
  else if ((lead & 0xF0) == 0xE0)
    length = 3, min = 0x800, code_point = lead & 0x0F;
  else if ((lead & 0xF8) == 0xF0)
    length = 4, min = 0x10000, code_point = lead & 0x07;
  else
    return 0;
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point < 0xE000))
    return 0;
  return length;
}

// The bytes a JSON string holds as they are: printable ASCII but ", \\, < and >.
constexpr std::array<bool, 256> kCopiedAsIs = [] {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x7F; ++c) table[c] = c != '"' && c != '\\' && c != '<' && c != '>';
  return table;
}();

// Appends `s` as a JSON string; false when it is not UTF-8 (protobuf's printer then decides).
bool AppendString(std::string_view s, std::string& out) {
  out += '"';
  size_t plain = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (kCopiedAsIs[c]) {
      ++i;
      continue;
    }
    if (c < 0x80) {
      out.append(s.data() + plain, i - plain);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          AppendU16Escape(c, out);
      }
      plain = ++i;
      continue;
    }
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(s, i, code_point);
    if (length == 0) return false;
    if (Escaped(code_point)) {
      out.append(s.data() + plain, i - plain);
      AppendCodePointEscape(code_point, out);
      plain = i + length;
    }
    i += length;
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
  return true;
}

// Whether the digits read back to `value` as protobuf checks it: strtod for a double; for a
// float strtof without an error, so a subnormal float (ERANGE) always takes the long form.
bool ReadsBack(const char* begin, const char* end, double value) {
  double back = 0;
  std::from_chars(begin, end, back);
  return back == value;
}

bool ReadsBack(const char* begin, const char* /*end*/, float value) {
  errno = 0;
  const float back = std::strtof(begin, nullptr);
  return errno == 0 && back == value;
}

// protobuf's SimpleDtoa / SimpleFtoa: the shorter precision when it reads back to the same
// value, else the longer one; non-finite values as quoted names.
template <typename Float>
void AppendFloating(Float value, int short_digits, int long_digits, std::string& out) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buffer[64];
  auto written = std::to_chars(buffer, buffer + sizeof buffer - 1, value,
                               std::chars_format::general, short_digits);
  *written.ptr = '\0';  // strtof reads up to it
  if (!ReadsBack(buffer, written.ptr, value))
    written = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general,
                            long_digits);
  out.append(buffer, written.ptr);
}

template <typename Integer>
void AppendInteger(Integer value, bool quoted, std::string& out);

// A double as protobuf's SimpleDtoa writes it, printf %.15g when that reads back exactly, else
// %.17g, without printing it twice where that can be avoided:
// - %.15g reads back exactly when the shortest form that does (std::to_chars, Ryu) has at most
//   15 digits, and is then those digits;
// - a shortest form of 17 digits is %.17g's digits: Ryu rounds the exact value at the length it
//   stops at, half to even as printf does, and the correctly rounded 17 digits always read back
//   (their error, at most 5e-17 of the value, is below half a unit in the last place, above
//   5.5e-17 of it), so no shorter length stopped it;
// - only a shortest form of 16 digits needs %.17g's own digits, printed again.
// The shortest form is laid out as %g lays out its digits: fixed from 1e-4 up to below 1e15
// (std::to_chars' fixed form then, as there are no trailing zeros to cut), else e(+|-)XX, where
// the 17-digit shortcut is not taken. That holds where a double has its 53 bits, not for
// subnormals.
void AppendDouble(double value, std::string& out) {
  // Subnormals have fewer digits than 15 to round to: printf's two tries there.
  if (!std::isnormal(value) && value != 0) return AppendFloating(value, 15, 17, out);
  const double magnitude = std::fabs(value);
  if (value == std::trunc(value) && magnitude < 1e15) {
    if (value == 0) {
      out += std::signbit(value) ? "-0" : "0";
      return;
    }
    return AppendInteger(static_cast<int64_t>(value), false, out);
  }
  const auto append_17_digits = [&] {
    char buffer[40];
    const auto written =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, 17);
    out.append(buffer, written.ptr);
  };
  char text[40];
  if (magnitude >= 1e-4 && magnitude < 1e15) {
    // [-]ddd.ddd or [-]0.000ddd: every digit after the leading zeros is significant.
    const char* const end =
        std::to_chars(text, text + sizeof text, value, std::chars_format::fixed).ptr;
    const char* p = text + (text[0] == '-' ? 1 : 0);
    while (p < end && (*p == '0' || *p == '.')) ++p;
    const auto digits = (end - p) - (std::find(p, end, '.') != end ? 1 : 0);
    if (digits == 16) return append_17_digits();
    out.append(text, static_cast<size_t>(end - text));
    return;
  }
  // [-]d[.ddd]e(+|-)XX[X]: printf's exponent form, the same digits and exponent. Longer forms
  // take %.17g, whose layout there may be fixed (up to 1e17).
  const char* const end =
      std::to_chars(text, text + sizeof text, value, std::chars_format::scientific).ptr;
  const char* const lead = text + (text[0] == '-' ? 1 : 0);
  const auto digits = (std::find(lead, end, 'e') - lead) - (lead[1] == '.' ? 1 : 0);
  if (digits > 15) return append_17_digits();
  out.append(text, static_cast<size_t>(end - text));
}

template <typename Integer>
void AppendInteger(Integer value, bool quoted, std::string& out) {
  char buffer[24];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (quoted) out += '"';
  out.append(buffer, written.ptr);
  if (quoted) out += '"';
}

void AppendBase64(std::string_view bytes, std::string& out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out += '"';
  size_t i = 0;
  const auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 0x3F];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 0x3F];
    out += kAlphabet[(v >> 12) & 0x3F];
    out += rest == 2 ? kAlphabet[(v >> 6) & 0x3F] : '=';
    out += '=';
  }
  out += '"';
}

// One value of `field` (element `index` when repeated); false when it cannot be written here.
bool AppendScalar(const Message& m, const Reflection& r, const FieldDescriptor* f, int index,
                  std::string& out) {
  const bool repeated = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      AppendDouble(repeated ? r.GetRepeatedDouble(m, f, index) : r.GetDouble(m, f), out);
      return true;
    case FieldDescriptor::CPPTYPE_FLOAT:
      AppendFloating(repeated ? r.GetRepeatedFloat(m, f, index) : r.GetFloat(m, f), 6, 9, out);
      return true;
    case FieldDescriptor::CPPTYPE_INT32:
      AppendInteger(repeated ? r.GetRepeatedInt32(m, f, index) : r.GetInt32(m, f), false, out);
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      AppendInteger(repeated ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f), false, out);
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      AppendInteger(repeated ? r.GetRepeatedInt64(m, f, index) : r.GetInt64(m, f), true, out);
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      AppendInteger(repeated ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f), true, out);
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (repeated ? r.GetRepeatedBool(m, f, index) : r.GetBool(m, f)) ? "true" : "false";
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = repeated ? r.GetRepeatedEnumValue(m, f, index) : r.GetEnumValue(m, f);
      if (const auto* value = f->enum_type()->FindValueByNumber(number))
        return AppendString(value->name(), out);
      AppendInteger(number, false, out);
      return true;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s = repeated ? r.GetRepeatedStringReference(m, f, index, &scratch)
                                      : r.GetStringReference(m, f, &scratch);
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        AppendBase64(s, out);
        return true;
      }
      return AppendString(s, out);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return false;
  }
  return false;
}

}  // namespace

google::protobuf::util::JsonPrintOptions ProtoJsonWriter::MatchedPrintOptions() {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  return options;
}

ProtoJsonWriter::ProtoJsonWriter() = default;
ProtoJsonWriter::~ProtoJsonWriter() = default;

const ProtoJsonWriter::Plan& ProtoJsonWriter::PlanFor(const Descriptor* type) {
  if (auto it = plans_.find(type); it != plans_.end()) return *it->second;
  Plan& plan = *plans_.emplace(type, std::make_unique<Plan>()).first->second;
  const auto* file = type->file();
  if (file->syntax() != google::protobuf::FileDescriptor::SYNTAX_PROTO3 ||
      file->package() == "google.protobuf" || type->oneof_decl_count() > 0 ||
      type->extension_range_count() > 0) {
    plan.covered = false;
    return plan;
  }
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->is_map()) plan.covered = false;
    std::string key;
    AppendString(field->name(), key);
    key += ':';
    // A message type may refer to itself: its plan is in the table already.
    const Plan* sub = field->message_type() != nullptr ? &PlanFor(field->message_type()) : nullptr;
    plan.fields.push_back({field, std::move(key), sub});
  }
  return plan;
}

bool ProtoJsonWriter::AppendMessage(const Message& message, const Plan& plan, std::string& out) {
  if (!plan.covered) return false;
  const Reflection& r = *message.GetReflection();
  out += '{';
  bool first = true;
  for (const Plan::Field& f : plan.fields) {
    if (f.sub != nullptr && !f.field->is_repeated() && !r.HasField(message, f.field)) continue;
    if (!first) out += ',';
    first = false;
    out += f.key;
    // The field's value, or element `i` of a list (i >= 0).
    const auto value = [&](int i) {
      if (f.sub == nullptr) return AppendScalar(message, r, f.field, i, out);
      return AppendMessage(
          i < 0 ? r.GetMessage(message, f.field) : r.GetRepeatedMessage(message, f.field, i),
          *f.sub, out);
    };
    if (!f.field->is_repeated()) {
      if (!value(-1)) return false;
      continue;
    }
    out += '[';
    const int n = r.FieldSize(message, f.field);
    for (int i = 0; i < n; ++i) {
      if (i > 0) out += ',';
      if (!value(i)) return false;
    }
    out += ']';
  }
  out += '}';
  return true;
}

void ProtoJsonWriter::Append(const Message& message, std::string& out) {
  const size_t start = out.size();
  if (AppendMessage(message, PlanFor(message.GetDescriptor()), out)) return;
  out.resize(start);
  ++fallbacks_;
  std::string one;
  (void)google::protobuf::util::MessageToJsonString(message, &one, MatchedPrintOptions());
  out += one;
}

}  // namespace gpuvpa
