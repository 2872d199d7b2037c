// ProtoJsonWriter against protobuf's own JSON printer, byte for byte: recommendations with
// random values (every double edge, strings over the whole of Unicode), a message built at run
// time with every scalar type, enums, bytes, repeated and self-nested fields, and the messages
// it leaves to protobuf (maps, oneofs, well-known types, strings that are not UTF-8).
#include "core/api/proto_json.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "core/api/recommendation_json.h"
#include "proto/gpuvpa.pb.h"

namespace gpuvpa {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string ProtobufJson(const Message& message) {
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(message, &out,
                                                          ProtoJsonWriter::MatchedPrintOptions())
                  .ok());
  return out;
}

std::string WriterJson(const Message& message, ProtoJsonWriter& writer) {
  std::string out;
  writer.Append(message, out);
  return out;
}

// Equal, or where they first differ.
::testing::AssertionResult SameJson(const std::string& ours, const std::string& protobufs) {
  if (ours == protobufs) return ::testing::AssertionSuccess();
  size_t at = 0;
  while (at < ours.size() && at < protobufs.size() && ours[at] == protobufs[at]) ++at;
  const size_t from = at < 60 ? 0 : at - 60;
  return ::testing::AssertionFailure()
         << "differ at byte " << at << ":\n  ours:     ..." << ours.substr(from, 120)
         << "\n  protobuf: ..." << protobufs.substr(from, 120);
}

std::string Utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | c >> 6);
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | c >> 12);
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | c >> 18);
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

class Values {
 public:
  explicit Values(uint64_t seed) : rng_(seed) {}

  double Double() {
    switch (Pick(11)) {
      case 9:
        return std::round(std::uniform_real_distribution<double>(-1e6, 1e6)(rng_)) / 1000;
      case 10:
        return std::uniform_int_distribution<int>(1, 999)(rng_) *
               std::pow(10.0, std::uniform_int_distribution<int>(-8, 20)(rng_));
      case 0:
        return 0;
      case 1:
        return Pick(2) ? -0.0 : std::numeric_limits<double>::quiet_NaN();
      case 2:
        return Pick(2) ? INFINITY : -INFINITY;
      case 3:
        return std::bit_cast<double>(rng_());  // any bit pattern, subnormals included
      case 4:
        return std::round(std::uniform_real_distribution<double>(0, 1e17)(rng_));
      case 5:
        return std::uniform_real_distribution<double>(0, 1)(rng_);
      case 6:
        return std::pow(10.0, std::uniform_int_distribution<int>(-30, 30)(rng_));
      case 7:
        return std::ldexp(1.0, std::uniform_int_distribution<int>(-1074, 1023)(rng_));
      default:
        return std::uniform_real_distribution<double>(-1e12, 1e12)(rng_);
    }
  }

  // Mostly ASCII, with every escape protobuf writes and code points from all of Unicode.
  std::string String() {
    std::string s;
    const int n = Pick(12);
    for (int i = 0; i < n; ++i) {
      switch (Pick(5)) {
        case 0:
          s += static_cast<char>(Pick(0x80));
          break;
        case 1:
          s += Utf8(0x80 + Pick(0x800 - 0x80));
          break;
        case 2: {
          uint32_t c = 0x800 + Pick(0x10000 - 0x800);
          if (c >= 0xD800 && c < 0xE000) c -= 0x800;
          s += Utf8(c);
          break;
        }
        case 3:
          s += Utf8(0x10000 + Pick(0x110000 - 0x10000));
          break;
        default:
          s += "team-a/<b>\"\\";
      }
    }
    return s;
  }

  uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }
  uint64_t Bits() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

// Every field of `message` (and of its sub-messages, down to `depth`) set to random values,
// some left at their defaults.
void Fill(Message& message, Values& v, int depth) {
  const auto* type = message.GetDescriptor();
  const auto* r = message.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    if (v.Pick(4) == 0) continue;
    const int count = f->is_repeated() ? static_cast<int>(v.Pick(4)) : 1;
    for (int k = 0; k < count; ++k) {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE:
          rep ? r->AddDouble(&message, f, v.Double()) : r->SetDouble(&message, f, v.Double());
          break;
        case FieldDescriptor::CPPTYPE_FLOAT: {
          const auto x = static_cast<float>(v.Double());
          rep ? r->AddFloat(&message, f, x) : r->SetFloat(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_INT32: {
          const auto x = static_cast<int32_t>(v.Bits());
          rep ? r->AddInt32(&message, f, x) : r->SetInt32(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT32: {
          const auto x = static_cast<uint32_t>(v.Bits());
          rep ? r->AddUInt32(&message, f, x) : r->SetUInt32(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_INT64: {
          const auto x = static_cast<int64_t>(v.Bits());
          rep ? r->AddInt64(&message, f, x) : r->SetInt64(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT64:
          rep ? r->AddUInt64(&message, f, v.Bits()) : r->SetUInt64(&message, f, v.Bits());
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          rep ? r->AddBool(&message, f, v.Pick(2)) : r->SetBool(&message, f, v.Pick(2));
          break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          // Known values, and now and then one the enum does not name.
          const int x =
              v.Pick(5) == 0
                  ? 77
                  : f->enum_type()->value(v.Pick(f->enum_type()->value_count()))->number();
          rep ? r->AddEnumValue(&message, f, x) : r->SetEnumValue(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
          std::string x = v.String();
          if (f->type() == FieldDescriptor::TYPE_BYTES)
            for (char& c : x) c = static_cast<char>(v.Bits());
          rep ? r->AddString(&message, f, x) : r->SetString(&message, f, x);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth > 0)
            Fill(rep ? *r->AddMessage(&message, f) : *r->MutableMessage(&message, f), v, depth - 1);
          break;
      }
    }
  }
}

TEST(ProtoJsonTest, RecommendationsAreWrittenAsProtobufWritesThem) {
  ProtoJsonWriter writer;
  Values values(1);
  for (int i = 0; i < 3000; ++i) {
    v1::Recommendation rec;
    if (i > 0) Fill(rec, values, 2);
    ASSERT_TRUE(SameJson(WriterJson(rec, writer), ProtobufJson(rec))) << rec.DebugString();
  }
  EXPECT_EQ(writer.fallbacks(), 0u);
}

TEST(ProtoJsonTest, TheListIsTheArrayOfEachRecommendationsJson) {
  std::vector<v1::Recommendation> recs(3);
  Values values(2);
  for (auto& rec : recs) Fill(rec, values, 1);
  std::vector<const v1::Recommendation*> pointers = {&recs[0], &recs[1], &recs[2]};
  EXPECT_EQ(RecommendationsJson(pointers), "[\n  " + ProtobufJson(recs[0]) + ",\n  " +
                                               ProtobufJson(recs[1]) + ",\n  " +
                                               ProtobufJson(recs[2]) + "\n]\n");
  EXPECT_EQ(RecommendationsJson({}), "[]\n");
}

// A file of every field shape, built at run time.
class DynamicProtoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = std::make_unique<google::protobuf::DescriptorPool>(
        google::protobuf::DescriptorPool::generated_pool());
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kFile, &file));
    ASSERT_NE(pool_->BuildFile(file), nullptr);
    factory_.SetDelegateToGeneratedFactory(true);
  }

  std::unique_ptr<Message> New(const std::string& name) {
    const auto* type = pool_->FindMessageTypeByName("probe." + name);
    EXPECT_NE(type, nullptr) << name;
    return std::unique_ptr<Message>(factory_.GetPrototype(type)->New());
  }

  static constexpr const char* kFile = R"pb(
    name: "probe.proto"
    package: "probe"
    syntax: "proto3"
    dependency: "google/protobuf/timestamp.proto"
    enum_type {
      name: "Color"
      value { name: "COLOR_UNSET" number: 0 }
      value { name: "RED" number: 1 }
      value { name: "GREEN" number: 2 }
    }
    message_type {
      name: "Every"
      field { name: "f_double" number: 1 type: TYPE_DOUBLE label: LABEL_OPTIONAL }
      field { name: "f_float" number: 2 type: TYPE_FLOAT label: LABEL_OPTIONAL }
      field { name: "f_int32" number: 3 type: TYPE_INT32 label: LABEL_OPTIONAL }
      field { name: "f_int64" number: 4 type: TYPE_INT64 label: LABEL_OPTIONAL }
      field { name: "f_uint32" number: 5 type: TYPE_UINT32 label: LABEL_OPTIONAL }
      field { name: "f_uint64" number: 6 type: TYPE_UINT64 label: LABEL_OPTIONAL }
      field { name: "f_sint32" number: 7 type: TYPE_SINT32 label: LABEL_OPTIONAL }
      field { name: "f_sint64" number: 8 type: TYPE_SINT64 label: LABEL_OPTIONAL }
      field { name: "f_fixed32" number: 9 type: TYPE_FIXED32 label: LABEL_OPTIONAL }
      field { name: "f_fixed64" number: 10 type: TYPE_FIXED64 label: LABEL_OPTIONAL }
      field { name: "f_sfixed32" number: 11 type: TYPE_SFIXED32 label: LABEL_OPTIONAL }
      field { name: "f_sfixed64" number: 12 type: TYPE_SFIXED64 label: LABEL_OPTIONAL }
      field { name: "f_bool" number: 13 type: TYPE_BOOL label: LABEL_OPTIONAL }
      field { name: "f_string" number: 14 type: TYPE_STRING label: LABEL_OPTIONAL }
      field { name: "f_bytes" number: 15 type: TYPE_BYTES label: LABEL_OPTIONAL }
      field {
        name: "f_color"
        number: 16
        type: TYPE_ENUM
        type_name: ".probe.Color"
        label: LABEL_OPTIONAL
      }
      field {
        name: "f_self"
        number: 17
        type: TYPE_MESSAGE
        type_name: ".probe.Every"
        label: LABEL_OPTIONAL
      }
      field { name: "r_double" number: 21 type: TYPE_DOUBLE label: LABEL_REPEATED }
      field { name: "r_float" number: 22 type: TYPE_FLOAT label: LABEL_REPEATED }
      field { name: "r_int64" number: 23 type: TYPE_INT64 label: LABEL_REPEATED }
      field { name: "r_uint32" number: 24 type: TYPE_UINT32 label: LABEL_REPEATED }
      field { name: "r_bool" number: 25 type: TYPE_BOOL label: LABEL_REPEATED }
      field { name: "r_string" number: 26 type: TYPE_STRING label: LABEL_REPEATED }
      field { name: "r_bytes" number: 27 type: TYPE_BYTES label: LABEL_REPEATED }
      field {
        name: "r_color"
        number: 28
        type: TYPE_ENUM
        type_name: ".probe.Color"
        label: LABEL_REPEATED
      }
      field {
        name: "r_self"
        number: 29
        type: TYPE_MESSAGE
        type_name: ".probe.Every"
        label: LABEL_REPEATED
      }
      field { name: "camelName" number: 30 type: TYPE_INT32 label: LABEL_OPTIONAL }
    }
    message_type {
      name: "WithMap"
      field {
        name: "counts"
        number: 1
        type: TYPE_MESSAGE
        type_name: ".probe.WithMap.CountsEntry"
        label: LABEL_REPEATED
      }
      nested_type {
        name: "CountsEntry"
        options { map_entry: true }
        field { name: "key" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
        field { name: "value" number: 2 type: TYPE_INT32 label: LABEL_OPTIONAL }
      }
    }
    message_type {
      name: "WithOneof"
      field { name: "a" number: 1 type: TYPE_INT32 label: LABEL_OPTIONAL oneof_index: 0 }
      field { name: "b" number: 2 type: TYPE_STRING label: LABEL_OPTIONAL oneof_index: 0 }
      oneof_decl { name: "choice" }
    }
    message_type {
      name: "WithTimestamp"
      field {
        name: "at"
        number: 1
        type: TYPE_MESSAGE
        type_name: ".google.protobuf.Timestamp"
        label: LABEL_OPTIONAL
      }
      field {
        name: "inner"
        number: 2
        type: TYPE_MESSAGE
        type_name: ".probe.WithMap"
        label: LABEL_OPTIONAL
      }
    }
  )pb";

  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
  google::protobuf::DynamicMessageFactory factory_{};
};

TEST_F(DynamicProtoTest, EveryScalarTypeEnumBytesAndNestingMatchProtobuf) {
  ProtoJsonWriter writer;
  Values values(3);
  for (int i = 0; i < 3000; ++i) {
    std::unique_ptr<Message> m = New("Every");
    if (i > 0) Fill(*m, values, 2);
    ASSERT_TRUE(SameJson(WriterJson(*m, writer), ProtobufJson(*m))) << m->DebugString();
  }
  EXPECT_EQ(writer.fallbacks(), 0u);
}

TEST_F(DynamicProtoTest, WhatTheWriterDoesNotCoverGoesThroughProtobufUnchanged) {
  ProtoJsonWriter writer;
  Values values(4);
  size_t expected_fallbacks = 0;
  for (const char* name : {"WithMap", "WithOneof", "WithTimestamp"}) {
    for (int i = 0; i < 50; ++i) {
      std::unique_ptr<Message> m = New(name);
      const auto* type = m->GetDescriptor();
      const auto* r = m->GetReflection();
      if (type->name() == "WithTimestamp") {
        // A valid time (protobuf refuses others), and a map inside now and then.
        Message* at = r->MutableMessage(m.get(), type->FindFieldByName("at"));
        at->GetReflection()->SetInt64(at, at->GetDescriptor()->FindFieldByName("seconds"),
                                      1793577600 + i);
        if (i % 2 == 0)
          Fill(*r->MutableMessage(m.get(), type->FindFieldByName("inner")), values, 1);
      } else {
        Fill(*m, values, 1);
        if (type->name() == "WithOneof")
          r->SetInt32(m.get(), type->FindFieldByName("a"), i);
        else
          Fill(*r->AddMessage(m.get(), type->FindFieldByName("counts")), values, 0);
      }
      ASSERT_TRUE(SameJson(WriterJson(*m, writer), ProtobufJson(*m))) << m->DebugString();
      ++expected_fallbacks;
    }
  }
  EXPECT_EQ(writer.fallbacks(), expected_fallbacks);
}

TEST(ProtoJsonTest, AStringThatIsNotUtf8IsLeftToProtobuf) {
  ProtoJsonWriter writer;
  for (const std::string bad : {"\xff", "a\xc3", "\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80"}) {
    v1::Recommendation rec;
    rec.mutable_identity()->set_container(bad);
    rec.set_confidence(0.5);
    ASSERT_TRUE(SameJson(WriterJson(rec, writer), ProtobufJson(rec)));
  }
  EXPECT_EQ(writer.fallbacks(), 5u);
}

}  // namespace
}  // namespace gpuvpa
