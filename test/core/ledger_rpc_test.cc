// The ledger over gRPC: rows from another process land once in the owner's ledger, over a real
// socket with mTLS; bad rows are refused naming the field, with nothing stored; a ledger service
// that is down is UNAVAILABLE; the scaler's meter spools while it is down and moves the rows
// once it is back.
#include "core/cost/ledger_rpc.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/cost/ledger_spool.h"
#include "core/net/grpc_server.h"
#include "scaler/service/activity_meter.h"
#include "test/support/money_util.h"
#include "test/support/sockets.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa {
namespace {

LedgerAction Row(const std::string& id, const std::string& cost_center, MicroUsd metered) {
  LedgerAction a;
  a.action_id = id;
  a.time_s = 1793577600;
  a.kind = ActionKind::kMeteredPeriod;
  a.status = ActionStatus::kApplied;
  a.namespace_name = "ai";
  a.workload = "ScaledObject/agent";
  a.cost_center = cost_center;
  a.gpu_model = "H100-80GB";
  a.period_start_s = 1793577600 - 600;
  a.period_end_s = 1793577600;
  a.metered_gpu_time = 600'000;
  a.metered = metered;
  a.reserved = 2 * metered;
  a.evidence_json = R"({"replica_seconds": 600})";
  return a;
}

std::unique_ptr<RemoteLedger> Connected(
    const ClientChannelOptions& options,
    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  Result<std::unique_ptr<RemoteLedger>> remote = RemoteLedger::Connect(options, timeout);
  EXPECT_TRUE(remote.ok()) << remote.status().message();
  return remote.ok() ? std::move(remote).value() : nullptr;
}

class LedgerRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificates(tmp_.dir().string(), &error)) << error;
    ledger_ = std::move(Ledger::Open(tmp_.Path("ledger.db"))).value();
    service_ = std::make_unique<LedgerServiceImpl>(*ledger_);
  }
  // mTLS: the server requires a client certificate signed by the test CA.
  void Serve(int port = 0) {
    ServerOptions o;
    o.listen_address = "127.0.0.1:" + std::to_string(port);
    o.tls_cert_file = tmp_.Path("server.pem");
    o.tls_key_file = tmp_.Path("server.key");
    o.client_ca_file = tmp_.Path("ca.pem");
    Result<RunningServer> server = StartServer(o, {service_.get()});
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server).value();
  }
  // `cert`: the client certificate's file stem ("" for none); the scaler's by default (these
  // rows are metered periods).
  ClientChannelOptions Client(int port, const std::string& cert = "gpuvpa-scaler") {
    ClientChannelOptions c;
    c.address = "127.0.0.1:" + std::to_string(port);
    c.ca_file = tmp_.Path("ca.pem");
    if (!cert.empty()) {
      c.client_cert_file = tmp_.Path(cert + ".pem");
      c.client_key_file = tmp_.Path(cert + ".key");
    }
    return c;
  }
  testing::ScopedTempDir tmp_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<LedgerServiceImpl> service_;
  RunningServer server_;
};

TEST_F(LedgerRpcTest, RowsLandOnceInTheOwnersLedgerWithEveryFieldKept) {
  Serve();
  Result<std::unique_ptr<RemoteLedger>> remote = RemoteLedger::Connect(Client(server_.port));
  ASSERT_TRUE(remote.ok()) << remote.status().message();
  const std::vector<LedgerAction> rows = {Row("metered/a/1", "ai-agents", 1'584'000),
                                          Row("metered/a/2", "ai-agents", 1'000'001),
                                          Row("metered/b/1", "search", 7)};
  Result<size_t> added = (*remote)->Append(rows);
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 3u);
  // A retry of a call whose answer was lost: nothing twice.
  Result<size_t> again = (*remote)->Append(rows);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(*ledger_->CountRows(), 3);
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->groups.size(), 2u);
  EXPECT_EQ(s->groups[0].group, "ai-agents");
  EXPECT_EQ(s->groups[0].metered, 2'584'001);
  EXPECT_EQ(s->groups[0].reserved, 5'168'002);
  EXPECT_EQ(s->groups[0].metered_gpu_time, 1'200'000);
  EXPECT_EQ(s->groups[1].metered, 7);
  // Every field survives the wire.
  const LedgerAction back = *LedgerRowFromProto(LedgerRowToProto(rows[0]));
  EXPECT_EQ(LedgerRowToProto(back).SerializeAsString(),
            LedgerRowToProto(rows[0]).SerializeAsString());
}

// More rows than one call carries (the updater's proposals of a large fleet) go in several
// calls; a repeat adds nothing.
TEST_F(LedgerRpcTest, AnAppendLargerThanOneCallIsSentInSeveralCalls) {
  Serve();
  std::unique_ptr<RemoteLedger> remote = Connected(Client(server_.port));
  std::vector<LedgerAction> rows;
  for (size_t i = 0; i < kMaxLedgerRowsPerCall + 1500; ++i)
    rows.push_back(Row("metered/" + std::to_string(i), "research", 1));
  Result<size_t> added = remote->Append(rows);
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, rows.size());
  EXPECT_EQ(*ledger_->CountRows(), static_cast<int64_t>(rows.size()));
  EXPECT_EQ(*remote->Append(rows), 0u);
}

TEST_F(LedgerRpcTest, BadRowsAreRefusedNamingTheFieldAndNothingOfTheCallIsStored) {
  Serve();
  std::unique_ptr<RemoteLedger> remote = Connected(Client(server_.port));
  LedgerAction negative = Row("metered/bad/1", "ai-agents", -5);
  Result<size_t> r =
      remote->Append(std::vector<LedgerAction>{Row("metered/ok/1", "x", 1), negative});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("metered -5 is negative"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(*ledger_->CountRows(), 0) << "all rows of a call or none";

  v1::LedgerRow wire = LedgerRowToProto(Row("metered/bad/2", "ai-agents", 1));
  wire.set_kind("free_money");
  Result<LedgerAction> parsed = LedgerRowFromProto(wire);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("kind \"free_money\""), std::string::npos)
      << parsed.status().message();
  wire = LedgerRowToProto(Row("metered/bad/3", "ai-agents", 1));
  wire.set_evidence_json("[1,2]");
  parsed = LedgerRowFromProto(wire);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("evidence_json is not a JSON object"),
            std::string::npos);
  LedgerAction no_cost_center = Row("metered/bad/4", "", 1);
  r = remote->Append(no_cost_center);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cost_center"), std::string::npos) << r.status().message();
}

// Each component's certificate x each row kind: the updater appends proposals, changes and
// rollbacks, the scaler metered periods and activations, nobody the owner's usage rows; KEDA's
// certificate (same CA) appends nothing; a certificate of a foreign CA does not connect. Ids
// are the writer's own: a row of an allowed kind under another writer's id prefix is refused.
TEST_F(LedgerRpcTest, EachWriterAppendsOnlyItsOwnKindsAndIds) {
  Serve();
  struct Kind {
    ActionKind kind;
    std::string id_prefix;
    std::string owner;  // "" : nobody's over the wire
  };
  const std::vector<Kind> kinds = {{ActionKind::kRecommendation, "recommendation/", "updater"},
                                   {ActionKind::kAppliedChange, "apply:", "updater"},
                                   {ActionKind::kRollback, "rollback:", "updater"},
                                   {ActionKind::kMeteredPeriod, "metered/", "scaler"},
                                   {ActionKind::kActivation, "metered/", "scaler"},
                                   {ActionKind::kDeactivation, "metered/", "scaler"},
                                   {ActionKind::kAllocatedUsage, "usage/", ""}};
  int allowed = 0;
  for (const auto& [cert, component] : std::vector<std::pair<std::string, std::string>>{
           {"gpuvpa-updater", "updater"}, {"gpuvpa-scaler", "scaler"}, {"client", "keda"}}) {
    std::unique_ptr<RemoteLedger> remote = Connected(Client(server_.port, cert));
    for (const Kind& k : kinds) {
      SCOPED_TRACE(cert + " appends " + std::string(ActionKindName(k.kind)));
      LedgerAction row = Row(k.id_prefix + cert + "/" + std::string(ActionKindName(k.kind)),
                             "finance", 6'880'000'000);
      row.kind = k.kind;
      Result<size_t> r = remote->Append(row);
      if (k.owner == component) {
        ++allowed;
        EXPECT_TRUE(r.ok()) << r.status().message();
      } else {
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().message();
        EXPECT_FALSE(*ledger_->Contains(row.action_id));
      }
    }
  }
  EXPECT_EQ(allowed, 6);
  EXPECT_EQ(*ledger_->CountRows(), 6);
  // Squatting: the scaler's kind under the updater's prefix, and the owner's usage ids.
  std::unique_ptr<RemoteLedger> scaler = Connected(Client(server_.port, "gpuvpa-scaler"));
  Result<size_t> r = scaler->Append(Row("apply:ns/Deployment/x/main:1", "finance", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ids of the scaler start with metered/"), std::string::npos)
      << r.status().message();
  std::unique_ptr<RemoteLedger> keda = Connected(Client(server_.port, "client"));
  r = keda->Append(Row("metered/keda/1", "finance", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("certificate (\"client\""), std::string::npos)
      << r.status().message();
  // A foreign CA's certificate naming the updater never gets through the handshake.
  std::unique_ptr<RemoteLedger> foreign =
      Connected(Client(server_.port, "foreign-updater"), std::chrono::milliseconds(2000));
  LedgerAction proposal = Row("recommendation/foreign/1", "finance", 1);
  proposal.kind = ActionKind::kRecommendation;
  r = foreign->Append(proposal);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
  EXPECT_EQ(*ledger_->CountRows(), 6);
  // A repeated id with another amount is refused naming both values.
  LedgerAction repeated = Row("metered/gpuvpa-scaler/metered_period", "finance", 1);
  repeated.kind = ActionKind::kMeteredPeriod;
  r = scaler->Append(repeated);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(r.status().message().find("is recorded with metered \"6880000000\"; this one has "
                                      "\"1\""),
            std::string::npos)
      << r.status().message();
}

// Appends larger than the service's 4 MiB request limit (the updater's proposals at 6,000
// workload-containers with long names; a scaler spool of 10,000 long rows) are split by size:
// every row lands once.
TEST_F(LedgerRpcTest, AppendsBeyondTheRequestLimitAreSplitBySizeAndLandOnce) {
  Serve();
  std::unique_ptr<RemoteLedger> updater = Connected(Client(server_.port, "gpuvpa-updater"));
  std::vector<LedgerAction> proposals;
  for (int i = 0; i < 6000; ++i) {
    LedgerAction a = Row(
        "recommendation/ml/Deployment/" + std::string(200, 'w') + "-" + std::to_string(i) + "/main",
        "research", 1);
    a.kind = ActionKind::kRecommendation;
    a.status = ActionStatus::kProposed;
    a.workload = "Deployment/" + std::string(200, 'w') + "-" + std::to_string(i) + "/main";
    a.evidence_json = R"({"note":")" + std::string(400, 'e') + R"("})";
    proposals.push_back(a);
  }
  size_t bytes = 0;
  for (const LedgerAction& a : proposals) bytes += LedgerRowToProto(a).ByteSizeLong();
  EXPECT_GT(bytes, kMaxLedgerRequestBytes) << "the test must pass the limit";
  Result<size_t> added = updater->Append(proposals);
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 6000u);
  std::vector<LedgerAction> metered;
  for (int i = 0; i < 10000; ++i) {
    LedgerAction a = Row("metered/" + std::string(300, 'q') + "/" + std::to_string(i), "ai", 1);
    a.workload = "ScaledObject/" + std::string(300, 'q');
    metered.push_back(a);
  }
  // Through a spool, as the scaler moves a long backlog.
  LedgerSpool spool(tmp_.Path("backlog.spool"));
  ASSERT_TRUE(spool.Append(metered).ok());
  std::unique_ptr<RemoteLedger> scaler = Connected(Client(server_.port, "gpuvpa-scaler"));
  Result<SpoolDrain> drained = spool.Drain(*scaler);
  ASSERT_TRUE(drained.ok()) << drained.status().message();
  EXPECT_EQ(drained->moved, 10000u);
  EXPECT_EQ(*ledger_->CountRows(), 16000);
  EXPECT_EQ(*updater->Append(proposals), 0u) << "a repeat adds nothing";
}

TEST_F(LedgerRpcTest, AClientWithoutACertificateIsRefusedAndADownServiceIsUnavailable) {
  Serve();
  std::unique_ptr<RemoteLedger> anonymous = Connected(Client(server_.port, ""));
  Result<size_t> r = anonymous->Append(Row("metered/x/1", "ai-agents", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(*ledger_->CountRows(), 0);

  const int closed = testing::FreeLocalPort();
  std::unique_ptr<RemoteLedger> down = Connected(Client(closed), std::chrono::milliseconds(500));
  r = down->Append(Row("metered/x/2", "ai-agents", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("127.0.0.1:" + std::to_string(closed)), std::string::npos)
      << r.status().message();

  ClientChannelOptions lone_cert = Client(server_.port);
  lone_cert.client_key_file.clear();
  EXPECT_EQ(RemoteLedger::Connect(lone_cert).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LedgerRpcTest, TheMeterSpoolsWhileTheServiceIsDownAndMovesTheRowsOnceItIsBack) {
  PriceBook prices;
  ASSERT_TRUE(prices.SetPrice("H100-80GB", "", 2.64, "test").ok());
  Result<scaler::ScaledObjectConfig> config =
      scaler::ParseScaledObjectConfig("agent", "ai",
                                      {{"listName", "jobs"},
                                       {"listLength", "5"},
                                       {"costCenter", "ai-agents"},
                                       {"gpuModel", "H100-80GB"}});
  ASSERT_TRUE(config.ok());
  const int port = testing::FreeLocalPort();
  std::unique_ptr<RemoteLedger> remote = Connected(Client(port), std::chrono::milliseconds(500));
  scaler::ActivityMeterOptions o;
  o.spool_path = tmp_.Path("metered.spool");
  double now = 1793577600;
  scaler::ActivityMeter meter(o, remote.get(), prices, [&] { return now; });
  meter.OnDepth(*config, 5);  // 1 replica
  now += 100;
  meter.OnDepth(*config, 0);  // closes 100 replica-seconds: the service is down
  EXPECT_EQ(meter.spooled_rows(), 1u);
  EXPECT_EQ(*ledger_->CountRows(), 0);
  meter.EvictIdle();  // still down: the row stays in the spool
  EXPECT_EQ(LedgerSpool(o.spool_path).Read()->size(), 1u);

  Serve(port);
  // The channel reconnects after its backoff: the periodic EvictIdle moves the row then. (A
  // call whose answer comes after the client's deadline is stored but stays spooled; the next
  // drain sends it again and the ledger keeps one.)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::filesystem::exists(o.spool_path) && std::chrono::steady_clock::now() < give_up) {
    meter.EvictIdle();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(*ledger_->CountRows(), 1);
  EXPECT_FALSE(std::filesystem::exists(o.spool_path));
  Result<Showback> s = ledger_->QueryShowback({});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_EQ(s->groups[0].metered_gpu_time, 100'000);
  EXPECT_EQ(s->groups[0].metered, testing::Cost(100'000, 2.64));
  meter.EvictIdle();
  EXPECT_EQ(*ledger_->CountRows(), 1) << "moved once";
}

// The updater's path: a sink that spools what the service refuses, each row once however often
// it is appended, and moves it before the next append once the service answers; corrupt spool
// lines are dropped one by one (counted), never blocking new rows.
TEST_F(LedgerRpcTest, TheSpoolingSinkLosesNothingAndSpoolsEachRowOnce) {
  const int port = testing::FreeLocalPort();
  std::unique_ptr<RemoteLedger> remote = Connected(Client(port), std::chrono::milliseconds(500));
  const std::string spool = tmp_.Path("updater.spool");
  SpoolingLedgerSink sink(*remote, spool);
  const std::vector<LedgerAction> hourly = {Row("metered/a/1", "research", 1),
                                            Row("metered/b/1", "fraud", 2)};
  for (int cycle = 0; cycle < 3; ++cycle) {
    Result<size_t> r = sink.Append(hourly);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, 0u);
  }
  ASSERT_TRUE(sink.Append(Row("metered/c/1", "research", 3)).ok());
  EXPECT_EQ(LedgerSpool(spool).Read()->size(), 3u) << "each row spooled once";
  EXPECT_EQ(sink.spooled_rows(), 3u);

  Serve(port);
  Result<size_t> added = size_t{0};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    added = sink.Append(Row("metered/d/1", "fraud", 4));
  } while (std::filesystem::exists(spool) && std::chrono::steady_clock::now() < give_up);
  ASSERT_TRUE(added.ok());
  EXPECT_FALSE(std::filesystem::exists(spool));
  EXPECT_EQ(*ledger_->CountRows(), 4) << "three spooled, one direct, none twice";
  const Showback s = *ledger_->QueryShowback({});
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.total.metered, 1 + 2 + 3 + 4);

  // A spool of corrupt lines: each is dropped and counted; new rows go straight to the ledger.
  std::ofstream(spool) << "00000000 not a row\n"
                       << "00000000 neither\n";
  SpoolingLedgerSink restarted(*remote, spool);
  Result<size_t> r = restarted.Append(Row("metered/e/1", "research", 5));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 1u);
  EXPECT_EQ(restarted.dropped_lines(), 2u);
  EXPECT_FALSE(std::filesystem::exists(spool));
}

// Rows an earlier scaler run could only spool (the service was down at its start too) are
// moved by the housekeeping of the next run, without waiting for a new row to be spooled.
TEST_F(LedgerRpcTest, TheMeterMovesAnEarlierRunsSpoolOnceTheServiceAnswers) {
  const std::string spool = tmp_.Path("metered.spool");
  ASSERT_TRUE(
      LedgerSpool(spool).Append(std::vector<LedgerAction>{Row("metered/old/1", "ai", 9)}).ok());
  Serve();
  std::unique_ptr<RemoteLedger> remote = Connected(Client(server_.port));
  PriceBook prices;
  scaler::ActivityMeterOptions o;
  o.spool_path = spool;
  scaler::ActivityMeter meter(o, remote.get(), prices, [] { return 1793577600.0; });
  meter.EvictIdle();
  EXPECT_FALSE(std::filesystem::exists(spool));
  EXPECT_EQ(*ledger_->CountRows(), 1);
  EXPECT_EQ(meter.spooled_rows(), 0u);
}

}  // namespace
}  // namespace gpuvpa
