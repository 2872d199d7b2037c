// The ledger over gRPC (gpuvpa.v1.LedgerService): the process that owns the ledger file serves
// it, the other components append through RemoteLedger. One SQLite file then has one writer
// however many components charge to it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/cost/ledger.h"
#include "core/net/grpc_client.h"
#include "proto/gpuvpa.grpc.pb.h"

namespace gpuvpa {

inline constexpr size_t kMaxLedgerRowsPerCall = 10000;
// The largest Append request the service takes: gRPC's default receive limit, which the
// recommender's server keeps (it is stated here so that both ends read the same number).
inline constexpr size_t kMaxLedgerRequestBytes = 4 * 1024 * 1024;
// What RemoteLedger puts in one call at most: rows are split by their encoded size under the
// server's limit, with room for the request's own framing. One row is at most about 70 KB
// (ValidateLedgerAction's bounds), so every valid row fits a call.
inline constexpr size_t kMaxLedgerCallBytes = kMaxLedgerRequestBytes - 64 * 1024;

// Who may append what: writers are who they say, and write only what is theirs. A client is
// known by its certificate (mTLS): a common name or DNS name `gpuvpa-updater` is the updater,
// `gpuvpa-scaler` the scaler (the names make-secrets.sh issues). Each may append only its own
// row kinds under its own id prefix, so no client writes another's rows or squats another's
// ids. Usage rows ("usage/" ids) are the ledger owner's own (the recommender's) and no client
// may append them. A verified certificate naming neither (KEDA's) may append nothing. A client
// without a certificate is accepted only over loopback (a process on the same host: local use,
// tests) and may append what the updater and the scaler may.
struct LedgerWriter {
  std::string_view component;
  std::vector<ActionKind> kinds;
  std::vector<std::string_view> id_prefixes;
};
// The writer a certificate name stands for, or null.
const LedgerWriter* LedgerWriterNamed(std::string_view certificate_name);
// A client without a certificate on loopback.
const LedgerWriter& LocalLedgerWriter();
// PERMISSION_DENIED naming the first row, its kind or id, and the writer, unless every row is
// the writer's to append.
Status AuthorizeLedgerRows(const LedgerWriter& writer, std::span<const LedgerAction> rows);

v1::LedgerRow LedgerRowToProto(const LedgerAction& action);
// INVALID_ARGUMENT naming the field for an unknown kind or status, an oversized field, or
// evidence that is not a JSON object. (Money, names and periods are checked by the ledger.)
Result<LedgerAction> LedgerRowFromProto(const v1::LedgerRow& row);

// Serves Append into `ledger` (which must outlive the service), to the writers above only.
class LedgerServiceImpl final : public v1::LedgerService::Service {
 public:
  explicit LedgerServiceImpl(Ledger& ledger) : ledger_(ledger) {}
  grpc::Status Append(grpc::ServerContext* context, const v1::LedgerAppendRequest* request,
                      v1::LedgerAppendResponse* response) override;

 private:
  Ledger& ledger_;
};

// Appends through a LedgerService, in calls of at most kMaxLedgerRowsPerCall rows and
// kMaxLedgerCallBytes encoded bytes (each stored
// whole or not at all; a failure part way leaves the earlier calls stored, and a retry of the
// whole append adds only what is missing). A failed call is UNAVAILABLE (or the server's
// INVALID_ARGUMENT) naming the address; nothing is kept here (callers that must not lose a row
// spool it: core/cost/ledger_spool.h). Marks are not forwarded (only the owner's own charges
// carry them): a call with marks is INVALID_ARGUMENT.
class RemoteLedger final : public LedgerSink {
 public:
  static Result<std::unique_ptr<RemoteLedger>> Connect(
      const ClientChannelOptions& options,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  Result<size_t> Append(std::span<const LedgerAction> actions,
                        std::span<const ChargeMark> marks = {}) override;
  using LedgerSink::Append;

 private:
  RemoteLedger(std::string address, std::unique_ptr<v1::LedgerService::Stub> stub,
               std::chrono::milliseconds timeout)
      : address_(std::move(address)), stub_(std::move(stub)), timeout_(timeout) {}
  const std::string address_;
  const std::unique_ptr<v1::LedgerService::Stub> stub_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace gpuvpa
