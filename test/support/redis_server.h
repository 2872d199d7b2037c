// A real redis-server for tests: 127.0.0.1, an ephemeral port, no persistence, killed on exit.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "test/support/sockets.h"

namespace gpuvpa::testing {

class RedisServer {
 public:
  RedisServer();  // picks a free port; does not start
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts redis-server and waits until it answers PING; false (with `error`) otherwise.
  bool Start(std::string* error);
  void Kill();  // SIGKILL, as a crash would
  int port() const { return port_; }

  // Runs one command (argv-style) and returns the reply as text ("(error) ..." for errors).
  std::string Command(const std::vector<std::string>& argv) const;
  // The `calls` count of one command in INFO commandstats (0 if never called).
  long CommandCalls(const std::string& command) const;
  // A counter of INFO stats, e.g. total_reads_processed (read events: one per round trip a
  // client makes, however many commands it pipelines into it).
  long Stat(const std::string& field) const;

 private:
  int port_;
  pid_t pid_ = -1;
};

}  // namespace gpuvpa::testing
