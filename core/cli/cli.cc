// CLI conventions on CLI11.
#include "core/cli/cli.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace gpuvpa {

std::string_view GpuvpaVersion() { return GPUVPA_VERSION; }

std::unique_ptr<CLI::App> NewCommandApp(std::string_view program, std::string_view command,
                                        std::string_view description) {
  auto app = std::make_unique<CLI::App>(std::string(description),
                                        std::string(program) + " " + std::string(command));
  app->set_version_flag("--version", std::string(program) + " " + std::string(GpuvpaVersion()));
  app->option_defaults()->always_capture_default();
  return app;
}

namespace {

CLI::Validator NumberCheck(std::string description, std::function<bool(double)> ok,
                           std::string rule) {
  return CLI::Validator(
      [ok = std::move(ok), rule = std::move(rule)](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v))
          return "\"" + text + "\" is not a finite number";
        return ok(v) ? std::string() : "\"" + text + "\" is not " + rule;
      },
      std::move(description));
}

std::string Plain(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

CLI::Validator PositiveNumber() {
  return NumberCheck(
      "POSITIVE", [](double v) { return v > 0; }, "positive");
}

CLI::Validator NonNegativeNumber() {
  return NumberCheck(
      "NON-NEGATIVE", [](double v) { return v >= 0; }, "zero or more");
}

CLI::Validator NumberInRange(double min, double max) {
  return NumberCheck(
      "[" + Plain(min) + " - " + Plain(max) + "]", [=](double v) { return v >= min && v <= max; },
      "in " + Plain(min) + ".." + Plain(max));
}

std::optional<int> ParseCommandLine(CLI::App& app, const std::vector<std::string>& args,
                                    std::ostream& out, std::ostream& err) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& v) {
    out << v.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << app.get_name() << ": " << e.what() << "\nRun '" << app.get_name()
        << " --help' for the flags.\n";
    return kExitUsage;
  }
  return std::nullopt;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

namespace {

std::string DispatcherUsage(std::string_view program, std::string_view description,
                            std::span<const Subcommand> commands) {
  size_t width = 0;
  for (const Subcommand& c : commands) width = std::max(width, c.name.size());
  std::string usage = std::string(description) + "\nusage: " + std::string(program) +
                      " COMMAND [flags]   (" + std::string(program) +
                      " COMMAND --help for its flags)\ncommands:\n";
  for (const Subcommand& c : commands)
    usage += "  " + c.name + std::string(width - c.name.size() + 2, ' ') + c.summary + "\n";
  return usage;
}

}  // namespace

int RunDispatcher(std::string_view program, std::string_view description,
                  std::span<const Subcommand> commands, const std::vector<std::string>& argv_tail,
                  std::ostream& out, std::ostream& err) {
  const std::string usage = DispatcherUsage(program, description, commands);
  if (argv_tail.empty()) {
    err << program << ": no command given\n" << usage;
    return kExitUsage;
  }
  const std::string& name = argv_tail.front();
  if (name == "--help" || name == "-h" || name == "help") {
    out << usage;
    return kExitOk;
  }
  if (name == "--version") {
    out << program << " " << GpuvpaVersion() << "\n";
    return kExitOk;
  }
  const std::vector<std::string> args(argv_tail.begin() + 1, argv_tail.end());
  for (const Subcommand& c : commands)
    if (c.name == name) return c.run(args, out, err);
  const Subcommand* closest = nullptr;
  size_t best = SIZE_MAX;
  for (const Subcommand& c : commands) {
    const size_t d = EditDistance(name, c.name);
    if (d < best) {
      best = d;
      closest = &c;
    }
  }
  err << program << ": unknown command \"" << name << "\"";
  if (closest != nullptr && best <= std::max<size_t>(2, closest->name.size() / 3))
    err << "; did you mean \"" << closest->name << "\"?";
  err << "\n" << usage;
  return kExitUsage;
}

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

int WaitForStopSignal(const sigset_t& signals) {
  int signal = 0;
  while (sigwait(&signals, &signal) != 0) {
  }
  return signal;
}

}  // namespace gpuvpa
