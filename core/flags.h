// Command-line flags for gpuvpa's binaries: "--name value" or "--name=value"; errors name the
// flag and the value.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace gpuvpa {

class FlagParser {
 public:
  explicit FlagParser(std::string command) : command_(std::move(command)) {}

  void AddString(std::string name, std::string* target, std::string help);
  void AddDouble(std::string name, double* target, std::string help);
  void AddInt(std::string name, int* target, std::string help);
  void AddBool(std::string name, bool* target, std::string help);  // takes no value

  // Parses args (flags only, no positional arguments).
  Status Parse(const std::vector<std::string>& args);
  std::string Usage() const;

 private:
  enum class Type { kString, kDouble, kInt, kBool };
  struct Flag {
    std::string name;
    Type type;
    void* target;
    std::string help;
  };
  Status Set(const Flag& flag, const std::string& value);

  std::string command_;
  std::vector<Flag> flags_;
};

}  // namespace gpuvpa
