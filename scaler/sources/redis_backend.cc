// Redis backend over hiredis (synchronous, each command bounded by the read's deadline).
#include "scaler/sources/redis_backend.h"

#include <hiredis/hiredis.h>

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
  c.ctx = redisConnectWithTimeout(config_.host.c_str(), config_.port, Remaining(deadline));
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
  Connection& c = connections_.at(static_cast<size_t>(worker));
  const std::string where = scaler::Describe(config_, q);
  for (int attempt = 0;; ++attempt) {
    const bool fresh = c.ctx == nullptr;
    if (fresh) GPUVPA_RETURN_IF_ERROR(Connect(c, deadline));
    auto run = [&](const char* format, auto... args) {
      redisSetTimeout(c.ctx, Remaining(deadline));
      return Reply(static_cast<redisReply*>(redisCommand(c.ctx, format, args...)));
    };
    // A failure on a reused connection that lost its server is retried once on a fresh one.
    bool retry = false;
    auto failed = [&](const Reply& reply, const char* what) -> Status {
      const std::string why = ErrorText(reply.get(), c.ctx);
      retry = !reply && !fresh && attempt == 0 && ConnectionLost(c.ctx) &&
              std::chrono::steady_clock::now() < deadline;
      if (!reply) Drop(c);  // the connection's state is unknown after an I/O error
      return UnavailableError(where + ": " + what + ": " + why);
    };
    Result<double> depth = [&]() -> Result<double> {
      if (c.database != q.database_index) {
        Reply r = run("SELECT %d", q.database_index);
        if (!r || r->type == REDIS_REPLY_ERROR) return failed(r, "SELECT");
        c.database = q.database_index;
      }
      switch (q.data_type) {
        case RedisDataType::kList:
        case RedisDataType::kSortedSet: {
          const bool list = q.data_type == RedisDataType::kList;
          Reply r = run(list ? "LLEN %b" : "ZCARD %b", q.key.data(), q.key.size());
          if (!r || r->type != REDIS_REPLY_INTEGER) return failed(r, list ? "LLEN" : "ZCARD");
          return static_cast<double>(r->integer);
        }
        case RedisDataType::kStream: {
          Reply exists = run("EXISTS %b", q.key.data(), q.key.size());
          if (!exists || exists->type != REDIS_REPLY_INTEGER) return failed(exists, "EXISTS");
          if (exists->integer == 0) return 0.0;  // no stream yet: no work
          Reply groups = run("XINFO GROUPS %b", q.key.data(), q.key.size());
          if (!groups || groups->type != REDIS_REPLY_ARRAY) return failed(groups, "XINFO GROUPS");
          for (size_t g = 0; g < groups->elements; ++g) {
            const redisReply* group = groups->element[g];
            const redisReply* name = Field(group, "name");
            if (name == nullptr || std::string_view(name->str, name->len) != q.consumer_group)
              continue;
            const redisReply* pending = Field(group, "pending");
            const redisReply* lag = Field(group, "lag");
            const double pending_n = pending && pending->type == REDIS_REPLY_INTEGER
                                         ? static_cast<double>(pending->integer)
                                         : 0;
            if (lag == nullptr || lag->type != REDIS_REPLY_INTEGER)
              return UnavailableError(
                  where +
                  ": the group's lag is unknown (Redis 7 reports it unless entries were deleted)");
            // Undelivered plus delivered but not acknowledged.
            return static_cast<double>(lag->integer) + pending_n;
          }
          return FailedPreconditionError(where + ": no consumer group \"" + q.consumer_group +
                                         "\"");
        }
      }
      return InternalError("unhandled redis data type");
    }();
    if (depth.ok() || !retry) return depth;
  }
}

}  // namespace gpuvpa::scaler
