// Redis backend over hiredis (synchronous, each command bounded by the read's deadline).
#include "scaler/sources/redis_backend.h"

#include <hiredis/hiredis.h>

#include <algorithm>

#include "core/net/address_map.h"

namespace gpuvpa::scaler {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// The time left until `deadline` (at least 1 ms, so that 0 never means "no timeout").
timeval Remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left < std::chrono::milliseconds(1)) left = std::chrono::milliseconds(1);
  return {static_cast<time_t>(left.count() / 1000000),
          static_cast<suseconds_t>(left.count() % 1000000)};
}

// Field `name` of a flat key/value array reply (XINFO GROUPS entries).
const redisReply* Field(const redisReply* map, std::string_view name) {
  for (size_t i = 0; i + 1 < map->elements; i += 2) {
    const redisReply* k = map->element[i];
    if (k->type == REDIS_REPLY_STRING && std::string_view(k->str, k->len) == name)
      return map->element[i + 1];
  }
  return nullptr;
}

// Why a command failed: the server's error text, an unexpected reply type, or the connection's
// error when there was no reply at all.
std::string ErrorText(const redisReply* reply, const redisContext* ctx) {
  if (reply == nullptr) return ctx->errstr;
  if (reply->str != nullptr) return std::string(reply->str, reply->len);
  return "unexpected reply type " + std::to_string(reply->type);
}

std::string Describe(const RedisBackendConfig& b, const RedisSourceConfig& q) {
  static constexpr const char* kTypes[] = {"list", "stream", "zset"};
  return "redis://" + b.Address() + "/" + std::to_string(q.database_index) + " " +
         kTypes[static_cast<int>(q.data_type)] + " " + q.key +
         (q.consumer_group.empty() ? "" : " group " + q.consumer_group);
}

// A consumer group's outstanding work from an XINFO GROUPS reply: undelivered (lag) plus
// delivered but not acknowledged (pending).
Result<double> StreamBacklog(const redisReply& groups, const RedisBackendConfig& b,
                             const RedisSourceConfig& q) {
  for (size_t g = 0; g < groups.elements; ++g) {
    const redisReply* group = groups.element[g];
    if (group->type != REDIS_REPLY_ARRAY) continue;
    const redisReply* name = Field(group, "name");
    if (name == nullptr || name->type != REDIS_REPLY_STRING ||
        std::string_view(name->str, name->len) != q.consumer_group)
      continue;
    const redisReply* pending = Field(group, "pending");
    const redisReply* lag = Field(group, "lag");
    const double pending_n =
        pending && pending->type == REDIS_REPLY_INTEGER ? static_cast<double>(pending->integer) : 0;
    if (lag == nullptr || lag->type != REDIS_REPLY_INTEGER)
      return UnavailableError(
          Describe(b, q) +
          ": the group's lag is unknown (Redis 7 reports it unless entries were deleted)");
    return static_cast<double>(lag->integer) + pending_n;
  }
  return FailedPreconditionError(Describe(b, q) + ": no consumer group \"" + q.consumer_group +
                                 "\"");
}

// A dropped connection (server restart, idle close) rather than an answer.
bool ConnectionLost(const redisContext* ctx) {
  return ctx->err == REDIS_ERR_IO || ctx->err == REDIS_ERR_EOF;
}

}  // namespace

std::string RedisQueueSource::Describe() const {
  return scaler::Describe(backend_.config(), config_);
}

RedisBackend::RedisBackend(RedisBackendConfig config, size_t max_pending)
    : config_(std::move(config)),
      connections_(static_cast<size_t>(config_.max_connections)),
      bulkhead_(std::make_unique<Bulkhead>("redis " + config_.Address(), config_.max_connections,
                                           max_pending)) {}

RedisBackend::~RedisBackend() {
  bulkhead_.reset();  // workers stop first
  for (Connection& c : connections_) Drop(c);
}

void RedisBackend::Drop(Connection& c) {
  if (c.ctx == nullptr) return;
  redisFree(c.ctx);
  c.ctx = nullptr;
  --open_;
}

Status RedisBackend::Connect(Connection& c, Deadline deadline) {
  const SocketTarget target = SocketAddress(config_.host, static_cast<uint16_t>(config_.port));
  c.ctx = redisConnectWithTimeout(target.host.c_str(), std::stoi(target.port), Remaining(deadline));
  if (c.ctx == nullptr || c.ctx->err) {
    const std::string why = c.ctx ? c.ctx->errstr : "out of memory";
    if (c.ctx != nullptr) redisFree(c.ctx);
    c.ctx = nullptr;
    return UnavailableError("redis " + config_.Address() + ": connect: " + why);
  }
  ++open_;
  c.database = 0;
  if (!config_.password.empty()) {
    // The password goes to this server only and never into an error or a log line.
    redisSetTimeout(c.ctx, Remaining(deadline));
    Reply reply(static_cast<redisReply*>(
        config_.username.empty() ? redisCommand(c.ctx, "AUTH %s", config_.password.c_str())
                                 : redisCommand(c.ctx, "AUTH %s %s", config_.username.c_str(),
                                                config_.password.c_str())));
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
      const std::string why = ErrorText(reply.get(), c.ctx);
      Drop(c);
      return UnavailableError("redis " + config_.Address() + ": AUTH: " + why);
    }
  }
  return OkStatus();
}

Result<double> RedisBackend::Read(int worker, const RedisSourceConfig& q, Deadline deadline) {
  return std::move(ReadMany(worker, {&q}, deadline).front());
}

std::vector<Result<double>> RedisBackend::ReadBatch(
    int worker, const std::vector<const QueueDepthSource*>& sources, Deadline deadline) {
  std::vector<const RedisSourceConfig*> queues;
  queues.reserve(sources.size());
  for (const QueueDepthSource* s : sources) {
    const auto* redis = dynamic_cast<const RedisQueueSource*>(s);
    if (redis == nullptr)
      return std::vector<Result<double>>(
          sources.size(),
          InternalError("redis " + config_.Address() +
                        ": asked to read a source of another backend: " + s->Describe()));
    queues.push_back(&redis->config());
  }
  return ReadMany(worker, queues, deadline);
}

std::vector<Result<double>> RedisBackend::ReadMany(
    int worker, const std::vector<const RedisSourceConfig*>& queues, Deadline deadline) {
  Connection& c = connections_.at(static_cast<size_t>(worker));
  for (int attempt = 0;; ++attempt) {
    const bool fresh = c.ctx == nullptr;
    if (fresh)
      if (Status connected = Connect(c, deadline); !connected.ok())
        return std::vector<Result<double>>(queues.size(), connected);
    bool lost = false;
    std::vector<Result<double>> depths = Exchange(c, queues, deadline, lost);
    // A reused connection that lost its server (a restart, an idle close) is retried once on a
    // fresh one.
    if (!lost || fresh || attempt > 0 || std::chrono::steady_clock::now() >= deadline)
      return depths;
  }
}

std::vector<Result<double>> RedisBackend::Exchange(
    Connection& c, const std::vector<const RedisSourceConfig*>& queues, Deadline deadline,
    bool& lost) {
  // What each reply answers, in the order the commands were written.
  enum class Ask { kSelect, kCount, kStreamExists, kStreamGroups };
  struct Step {
    size_t queue;
    Ask ask;
    const char* command;
  };
  // Queues grouped by database (stable), so a batch switches database as rarely as possible.
  std::vector<size_t> order(queues.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return queues[a]->database_index < queues[b]->database_index;
  });
  std::vector<Step> steps;
  steps.reserve(queues.size() + 1);
  int database = c.database;
  for (size_t i : order) {
    const RedisSourceConfig& q = *queues[i];
    if (q.database_index != database) {
      redisAppendCommand(c.ctx, "SELECT %d", q.database_index);
      steps.push_back({i, Ask::kSelect, "SELECT"});
      database = q.database_index;
    }
    switch (q.data_type) {
      case RedisDataType::kList:
        redisAppendCommand(c.ctx, "LLEN %b", q.key.data(), q.key.size());
        steps.push_back({i, Ask::kCount, "LLEN"});
        break;
      case RedisDataType::kSortedSet:
        redisAppendCommand(c.ctx, "ZCARD %b", q.key.data(), q.key.size());
        steps.push_back({i, Ask::kCount, "ZCARD"});
        break;
      case RedisDataType::kStream:
        redisAppendCommand(c.ctx, "EXISTS %b", q.key.data(), q.key.size());
        steps.push_back({i, Ask::kStreamExists, "EXISTS"});
        redisAppendCommand(c.ctx, "XINFO GROUPS %b", q.key.data(), q.key.size());
        steps.push_back({i, Ask::kStreamGroups, "XINFO GROUPS"});
        break;
    }
  }
  std::vector<Result<double>> depths(queues.size(), InternalError("redis: no reply read"));
  std::vector<bool> answered(queues.size(), false);
  auto answer = [&](size_t i, Result<double> depth) {
    depths[i] = std::move(depth);
    answered[i] = true;
  };
  auto failed = [&](size_t i, const redisReply* reply, const char* what) {
    answer(i, UnavailableError(scaler::Describe(config_, *queues[i]) + ": " + what + ": " +
                               ErrorText(reply, c.ctx)));
  };
  // The queues after a refused SELECT were read in another database: they fail with its error.
  bool select_refused = false;
  std::string select_error;
  redisSetTimeout(c.ctx, Remaining(deadline));
  for (const Step& step : steps) {
    void* raw = nullptr;
    if (redisGetReply(c.ctx, &raw) != REDIS_OK || raw == nullptr) {
      // The connection's state is unknown after an I/O error: every queue not answered yet
      // fails with it, and the connection goes.
      for (size_t i = 0; i < queues.size(); ++i)
        if (!answered[i]) failed(i, nullptr, step.command);
      lost = ConnectionLost(c.ctx);
      Drop(c);
      return depths;
    }
    const Reply reply(static_cast<redisReply*>(raw));
    const size_t i = step.queue;
    if (step.ask == Ask::kSelect) {
      select_refused = reply->type != REDIS_REPLY_STATUS;
      select_error = select_refused ? ErrorText(reply.get(), c.ctx) : std::string();
      c.database = select_refused ? -1 : queues[i]->database_index;  // -1: select again next time
    }
    if (select_refused) {
      if (!answered[i])
        answer(i, UnavailableError(scaler::Describe(config_, *queues[i]) +
                                   ": SELECT: " + select_error));
      continue;
    }
    if (answered[i]) continue;  // a stream that does not exist: its XINFO error means nothing
    switch (step.ask) {
      case Ask::kSelect:
        break;
      case Ask::kCount:
        if (reply->type != REDIS_REPLY_INTEGER)
          failed(i, reply.get(), step.command);
        else
          answer(i, static_cast<double>(reply->integer));
        break;
      case Ask::kStreamExists:
        if (reply->type != REDIS_REPLY_INTEGER)
          failed(i, reply.get(), step.command);
        else if (reply->integer == 0)
          answer(i, 0.0);  // no stream yet: no work
        break;
      case Ask::kStreamGroups:
        if (reply->type != REDIS_REPLY_ARRAY)
          failed(i, reply.get(), step.command);
        else
          answer(i, StreamBacklog(*reply, config_, *queues[i]));
        break;
    }
  }
  return depths;
}

}  // namespace gpuvpa::scaler
