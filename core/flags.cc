// Flag parsing.
#include "core/flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gpuvpa {

void FlagParser::AddString(std::string name, std::string* target, std::string help) {
  flags_.push_back({std::move(name), Type::kString, target, std::move(help)});
}
void FlagParser::AddDouble(std::string name, double* target, std::string help) {
  flags_.push_back({std::move(name), Type::kDouble, target, std::move(help)});
}
void FlagParser::AddInt(std::string name, int* target, std::string help) {
  flags_.push_back({std::move(name), Type::kInt, target, std::move(help)});
}
void FlagParser::AddBool(std::string name, bool* target, std::string help) {
  flags_.push_back({std::move(name), Type::kBool, target, std::move(help)});
}

Status FlagParser::Set(const Flag& flag, const std::string& value) {
  auto bad = [&](const char* what) {
    return InvalidArgumentError("--" + flag.name + " \"" + value + "\" is not " + what);
  };
  const char* end = value.data() + value.size();
  switch (flag.type) {
    case Type::kString:
      *static_cast<std::string*>(flag.target) = value;
      return OkStatus();
    case Type::kDouble: {
      double v = 0;
      auto [ptr, ec] = std::from_chars(value.data(), end, v);
      if (ec != std::errc() || ptr != end || !std::isfinite(v)) return bad("a number");
      *static_cast<double*>(flag.target) = v;
      return OkStatus();
    }
    case Type::kInt: {
      int v = 0;
      auto [ptr, ec] = std::from_chars(value.data(), end, v);
      if (ec != std::errc() || ptr != end) return bad("an integer");
      *static_cast<int*>(flag.target) = v;
      return OkStatus();
    }
    case Type::kBool:
      if (value == "true" || value == "1") {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return bad("true or false");
      }
      return OkStatus();
  }
  return InternalError("unhandled flag type");
}

Status FlagParser::Parse(const std::vector<std::string>& args) {
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0)
      return InvalidArgumentError(command_ + ": unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) return InvalidArgumentError(command_ + ": unknown flag --" + name);
    if (!has_value) {
      if (flag->type == Type::kBool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return InvalidArgumentError(command_ + ": flag --" + name + " needs a value");
      }
    }
    if (Status s = Set(*flag, value); !s.ok()) return s;
    seen.push_back(name);
  }
  for (const std::string& name : required_) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end())
      return InvalidArgumentError(command_ + ": --" + name + " is required");
  }
  return OkStatus();
}

bool FlagParser::ParseOrExplain(const std::vector<std::string>& args, std::ostream& err) {
  if (Status s = Parse(args); !s.ok()) {
    err << s.message() << "\n" << Usage();
    return false;
  }
  return true;
}

std::string FlagParser::Usage() const {
  std::string out = "usage: gpuvpa " + command_ + " [flags]\n";
  for (const Flag& f : flags_) out += "  --" + f.name + "\t" + f.help + "\n";
  return out;
}

}  // namespace gpuvpa
