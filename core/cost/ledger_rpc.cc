// gpuvpa.v1.LedgerService: row conversion, the server and the client.
#include "core/cost/ledger_rpc.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/base/names.h"
#include "core/net/grpc_server.h"

namespace gpuvpa {
namespace {

constexpr size_t kMaxIdBytes = 1024;
constexpr size_t kMaxTextBytes = 4096;
constexpr size_t kMaxEvidenceBytes = 64 * 1024;

}  // namespace

v1::LedgerRow LedgerRowToProto(const LedgerAction& a) {
  v1::LedgerRow r;
  r.set_action_id(a.action_id);
  r.set_time_s(a.time_s);
  r.set_kind(std::string(ActionKindName(a.kind)));
  r.set_status(std::string(ActionStatusName(a.status)));
  r.set_namespace_name(a.namespace_name);
  r.set_workload(a.workload);
  r.set_cost_center(a.cost_center);
  r.set_gpu_model(a.gpu_model);
  r.set_before(a.before);
  r.set_after(a.after);
  r.set_monthly_before_micro_usd(a.monthly_before);
  r.set_monthly_after_micro_usd(a.monthly_after);
  r.set_period_start_s(a.period_start_s);
  r.set_period_end_s(a.period_end_s);
  r.set_allocated_milli_gpu_s(a.allocated_gpu_time);
  r.set_allocated_micro_usd(a.allocated);
  r.set_usage_measured(a.usage_measured);
  r.set_used_vram_micro_usd(a.used_vram);
  r.set_used_sm_micro_usd(a.used_sm);
  r.set_metered_milli_gpu_s(a.metered_gpu_time);
  r.set_metered_micro_usd(a.metered);
  r.set_reserved_micro_usd(a.reserved);
  r.set_evidence_json(a.evidence_json);
  return r;
}

Result<LedgerAction> LedgerRowFromProto(const v1::LedgerRow& r) {
  const std::string who = "ledger row " + QuoteForError(r.action_id());
  if (r.action_id().size() > kMaxIdBytes)
    return InvalidArgumentError("ledger row: action_id is longer than " +
                                std::to_string(kMaxIdBytes) + " bytes");
  const std::pair<const char*, const std::string*> texts[] = {
      {"namespace_name", &r.namespace_name()},
      {"workload", &r.workload()},
      {"cost_center", &r.cost_center()},
      {"gpu_model", &r.gpu_model()},
      {"before", &r.before()},
      {"after", &r.after()}};
  for (const auto& [field, value] : texts)
    if (value->size() > kMaxTextBytes)
      return InvalidArgumentError(who + ": " + field + " is longer than " +
                                  std::to_string(kMaxTextBytes) + " bytes");
  Result<ActionKind> kind = ParseActionKind(r.kind());
  if (!kind.ok())
    return InvalidArgumentError(who + ": kind " + QuoteForError(r.kind()) + ": " +
                                kind.status().message());
  Result<ActionStatus> status = ParseActionStatus(r.status());
  if (!status.ok())
    return InvalidArgumentError(who + ": status " + QuoteForError(r.status()) + ": " +
                                status.status().message());
  if (r.evidence_json().size() > kMaxEvidenceBytes)
    return InvalidArgumentError(who + ": evidence_json is longer than " +
                                std::to_string(kMaxEvidenceBytes) + " bytes");
  const nlohmann::json evidence = nlohmann::json::parse(r.evidence_json(), nullptr, false);
  if (evidence.is_discarded() || !evidence.is_object())
    return InvalidArgumentError(who + ": evidence_json is not a JSON object");
  LedgerAction a;
  a.action_id = r.action_id();
  a.time_s = r.time_s();
  a.kind = *kind;
  a.status = *status;
  a.namespace_name = r.namespace_name();
  a.workload = r.workload();
  a.cost_center = r.cost_center();
  a.gpu_model = r.gpu_model();
  a.before = r.before();
  a.after = r.after();
  a.monthly_before = r.monthly_before_micro_usd();
  a.monthly_after = r.monthly_after_micro_usd();
  a.period_start_s = r.period_start_s();
  a.period_end_s = r.period_end_s();
  a.allocated_gpu_time = r.allocated_milli_gpu_s();
  a.allocated = r.allocated_micro_usd();
  a.usage_measured = r.usage_measured();
  a.used_vram = r.used_vram_micro_usd();
  a.used_sm = r.used_sm_micro_usd();
  a.metered_gpu_time = r.metered_milli_gpu_s();
  a.metered = r.metered_micro_usd();
  a.reserved = r.reserved_micro_usd();
  a.evidence_json = r.evidence_json();
  return a;
}

grpc::Status LedgerServiceImpl::Append(grpc::ServerContext*, const v1::LedgerAppendRequest* request,
                                       v1::LedgerAppendResponse* response) {
  if (static_cast<size_t>(request->rows_size()) > kMaxLedgerRowsPerCall)
    return ToGrpcStatus(InvalidArgumentError("rows: " + std::to_string(request->rows_size()) +
                                             " rows in one call; at most " +
                                             std::to_string(kMaxLedgerRowsPerCall)));
  std::vector<LedgerAction> rows;
  rows.reserve(static_cast<size_t>(request->rows_size()));
  for (const v1::LedgerRow& r : request->rows()) {
    Result<LedgerAction> a = LedgerRowFromProto(r);
    if (!a.ok()) return ToGrpcStatus(a.status());
    rows.push_back(*std::move(a));
  }
  Result<size_t> added = ledger_.Append(rows);
  if (!added.ok()) return ToGrpcStatus(added.status());
  response->set_added(*added);
  return grpc::Status::OK;
}

Result<std::unique_ptr<RemoteLedger>> RemoteLedger::Connect(const ClientChannelOptions& options,
                                                            std::chrono::milliseconds timeout) {
  Result<std::shared_ptr<grpc::Channel>> channel = MakeClientChannel(options);
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<RemoteLedger>(
      new RemoteLedger(options.address, v1::LedgerService::NewStub(*channel), timeout));
}

Result<size_t> RemoteLedger::Append(std::span<const LedgerAction> actions,
                                    std::span<const ChargeMark> marks) {
  if (!marks.empty())
    return InvalidArgumentError("charge marks are kept by the ledger's owner, not sent to " +
                                address_);
  size_t added = 0;
  for (size_t at = 0; at < actions.size(); at += kMaxLedgerRowsPerCall) {
    v1::LedgerAppendRequest request;
    for (const LedgerAction& a :
         actions.subspan(at, std::min(kMaxLedgerRowsPerCall, actions.size() - at)))
      *request.add_rows() = LedgerRowToProto(a);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    v1::LedgerAppendResponse response;
    const grpc::Status s = stub_->Append(&context, request, &response);
    if (!s.ok()) {
      const std::string what = "ledger service " + address_ + ": " + s.error_message();
      if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return InvalidArgumentError(what);
      return UnavailableError(what);
    }
    added += static_cast<size_t>(response.added());
  }
  return added;
}

}  // namespace gpuvpa
