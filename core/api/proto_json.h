// A proto3 message as JSON, written the way protobuf's own printer (libprotobuf 3.21,
// MessageToJsonString with preserve_proto_field_names and always_print_primitive_fields) writes
// it, byte for byte, without its per-call type resolution and object-writer stack: a plan of
// each message type's fields is built once, values are read through reflection and numbers
// written with std::to_chars. Messages it does not cover (maps, oneofs and proto3 `optional`,
// google.protobuf well-known types, proto2 syntax, a string that is not UTF-8) are handed to
// protobuf's printer whole, so the output never differs from it.
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <string>
#include <unordered_map>

namespace gpuvpa {

class ProtoJsonWriter {
 public:
  ProtoJsonWriter();
  ~ProtoJsonWriter();
  ProtoJsonWriter(const ProtoJsonWriter&) = delete;
  ProtoJsonWriter& operator=(const ProtoJsonWriter&) = delete;

  // The options of protobuf's printer whose output this writer's is, byte for byte (what it
  // hands the messages it does not cover to, and what its checks compare it with).
  static google::protobuf::util::JsonPrintOptions MatchedPrintOptions();

  // Appends `message` as one compact JSON object to `out`.
  void Append(const google::protobuf::Message& message, std::string& out);

  // How many messages went through protobuf's printer (not covered by the plans).
  size_t fallbacks() const { return fallbacks_; }

 private:
  struct Plan;
  const Plan& PlanFor(const google::protobuf::Descriptor* type);
  bool AppendMessage(const google::protobuf::Message& message, const Plan& plan, std::string& out);

  std::unordered_map<const google::protobuf::Descriptor*, std::unique_ptr<Plan>> plans_;
  size_t fallbacks_ = 0;
};

}  // namespace gpuvpa
