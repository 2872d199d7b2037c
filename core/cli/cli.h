// Command-line conventions shared by every gpuvpa binary, on CLI11: `--help` prints help and
// exits 0, `--version` prints the version, a bad flag or value is an error naming it (exit 2),
// a failed run exits 1. A binary with subcommands dispatches through RunDispatcher, which names
// an unknown subcommand and suggests the closest one.
#pragma once

#include <CLI/CLI.hpp>
#include <csignal>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvpa {

// Exit codes of gpuvpa's commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The project version (CMake's project version).
std::string_view GpuvpaVersion();

// A CLI11 app for one command, named "<program> <command>" in its help, with --version.
std::unique_ptr<CLI::App> NewCommandApp(std::string_view program, std::string_view command,
                                        std::string_view description);

// Number checks for flags that say the rule and the value (CLI11's own print the type's
// limits) and refuse NaN and infinities.
CLI::Validator PositiveNumber();
CLI::Validator NonNegativeNumber();
CLI::Validator NumberInRange(double min, double max);

// Parses `args` (the words after the command name). Returns an exit code when the run ends
// here (help or version printed to `out`: 0; a usage error printed to `err`: 2), nothing when
// the command should go on.
std::optional<int> ParseCommandLine(CLI::App& app, const std::vector<std::string>& args,
                                    std::ostream& out, std::ostream& err);

struct Subcommand {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)>
      run;
};

// `program COMMAND [flags]`: runs the named subcommand; `--help`/`-h`/`help` lists them (exit
// 0), `--version` prints the version, no command or an unknown one is a usage error (exit 2)
// that suggests the closest name.
int RunDispatcher(std::string_view program, std::string_view description,
                  std::span<const Subcommand> commands, const std::vector<std::string>& argv_tail,
                  std::ostream& out, std::ostream& err);

// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread started after it. A
// daemon calls it first, before anything starts a thread: a stop signal that arrives during
// start-up then waits for WaitForStopSignal instead of killing the process half-started, and no
// helper thread can take the signal's default action.
sigset_t BlockStopSignals();
// Waits for one of the blocked stop signals; returns its number.
int WaitForStopSignal(const sigset_t& signals);

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace gpuvpa
