// Child processes for tests (real servers): spawn with output to a file, kill as a crash would.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace gpuvpa::testing {

// Starts `argv[0]` (searched in PATH) with stdout and stderr going to `output_path`. Returns the
// pid, or -1 when it cannot start.
pid_t SpawnProcess(std::vector<std::string> argv, const std::string& output_path);
// SIGKILL and reap; sets `pid` to -1. Does nothing for -1.
void KillProcess(pid_t& pid);
// Runs `command` with /bin/sh, stderr into stdout; returns the output, the exit status in `rc`
// (-1 when it could not run or did not exit).
std::string RunShell(const std::string& command, int* rc);
// Waits for `pid` to exit and reaps it: its exit status (128 + signal when killed by one), or
// -1 after `limit` (it is then killed). Sets `pid` to -1 either way.
int WaitForExit(pid_t& pid, std::chrono::milliseconds limit);
// Whether `pid` has exited (it is then reaped and `pid` set to -1); false while it runs.
bool HasExited(pid_t& pid);
// A whole text file ("" when it cannot be read): logs of child processes.
std::string ReadTextFile(const std::string& path);

}  // namespace gpuvpa::testing
