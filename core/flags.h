// Command-line flags for gpuvpa's binaries: "--name value" or "--name=value"; errors name the
// flag and the value.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"

namespace gpuvpa {

// Exit codes of gpuvpa's commands.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

class FlagParser {
 public:
  explicit FlagParser(std::string command) : command_(std::move(command)) {}

  void AddString(std::string name, std::string* target, std::string help);
  void AddDouble(std::string name, double* target, std::string help);
  void AddInt(std::string name, int* target, std::string help);
  void AddBool(std::string name, bool* target, std::string help);  // takes no value
  // Parse fails unless the flag is given.
  void Require(std::string name) { required_.push_back(std::move(name)); }

  // Parses args (flags only, no positional arguments).
  Status Parse(const std::vector<std::string>& args);
  // Parse, and on failure write the error and the usage to `err`.
  bool ParseOrExplain(const std::vector<std::string>& args, std::ostream& err);
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
  std::vector<std::string> required_;
};

}  // namespace gpuvpa
