// gpuvpa ledger migrate | check | copy: the ledger's schema and consistency, and moving a ledger
// between backends.
#include <map>
#include <set>

#include "cmd/commands.h"
#include "core/base/names.h"
#include "core/cli/cli.h"
#include "core/cli/ledger_flags.h"
#include "core/cost/ledger.h"

namespace gpuvpa::cmd {
namespace {

constexpr const char* kMigrate = "gpuvpa ledger migrate";
constexpr const char* kCopy = "gpuvpa ledger copy";
constexpr const char* kCheck = "gpuvpa ledger check";

// Parses a command whose only flags are the ledger's: an exit code when it should stop there.
std::optional<int> ParseLedgerFlagsOnly(std::string_view command, std::string_view help,
                                        std::string_view ledger_help, LedgerAccess access,
                                        LedgerFlags& flags, const std::vector<std::string>& args,
                                        std::ostream& out, std::ostream& err) {
  auto app = NewCommandApp("gpuvpa ledger", command, help);
  AddLedgerFlags(*app, flags, ledger_help, access);
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return done;
  if (flags.given()) return std::nullopt;
  err << "gpuvpa ledger " << command << ": --ledger or --ledger-url-file is required\n";
  return kExitUsage;
}

int Migrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  LedgerFlags flags;
  if (std::optional<int> done = ParseLedgerFlagsOnly(
          "migrate",
          "Create the ledger, or bring its schema to this build's version (idempotent; a ledger "
          "newer than this build is refused). Rows written before clusters existed belong to "
          "--cluster. With PostgreSQL, run it with a role that may create tables; writers then "
          "need only INSERT and SELECT.",
          "the ledger", LedgerAccess::kWrite, flags, args, out, err))
    return *done;
  Result<std::unique_ptr<Ledger>> ledger = OpenLedger(flags);
  if (!ledger.ok()) {
    err << kMigrate << ": " << ledger.status().message() << "\n";
    return ledger.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  out << "ledger " << LedgerShownAs(flags) << ": schema version " << (*ledger)->schema_version()
      << " (this build's)\n";
  return kExitOk;
}

int Check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  LedgerFlags flags;
  if (std::optional<int> done = ParseLedgerFlagsOnly(
          "check",
          "Check the ledger, read-only: the database's own check (SQLite's integrity_check; "
          "PostgreSQL's schema version), then the daily totals (ledger_daily) against the rows "
          "they sum. Exit 0 when both hold, 1 naming what is broken.",
          "the ledger to check", LedgerAccess::kRead, flags, args, out, err))
    return *done;
  Result<std::unique_ptr<Ledger>> ledger =
      OpenLedger(flags, /*must_exist=*/true, /*read_only=*/true);
  Result<std::string> check = ledger.ok() ? (*ledger)->IntegrityCheck() : ledger.status();
  if (!check.ok()) {
    err << kCheck << ": " << check.status().message() << "\n";
    return check.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (*check != "ok") {
    err << kCheck << ": ledger " << LedgerShownAs(flags) << ": " << *check << "\n";
    return kExitFailure;
  }
  Result<int64_t> rows = (*ledger)->CountRows();
  out << "ledger " << LedgerShownAs(flags) << ": ok (schema version " << (*ledger)->schema_version()
      << ", " << (rows.ok() ? std::to_string(*rows) : "?")
      << " rows; the daily totals equal the rows)\n";
  return kExitOk;
}

// The source's totals that the destination does not equal, as lines for the user.
// With `others_write`, the destination may hold more rows of a group than the source, and
// groups the source lacks.
std::vector<std::string> Differences(const std::vector<LedgerTotal>& from,
                                     const std::vector<LedgerTotal>& to, bool others_write) {
  std::set<std::string> clusters;
  for (const LedgerTotal& t : from) clusters.insert(t.cluster);
  std::map<std::tuple<std::string, std::string, std::string>, const LedgerTotal*> there;
  for (const LedgerTotal& t : to)
    if (clusters.count(t.cluster)) there[{t.cluster, t.cost_center, t.kind}] = &t;
  std::vector<std::string> lines;
  auto name = [](const LedgerTotal& t) { return t.cluster + "/" + t.cost_center + "/" + t.kind; };
  for (const LedgerTotal& t : from) {
    auto it = there.find({t.cluster, t.cost_center, t.kind});
    if (it == there.end()) {
      lines.push_back(name(t) + ": " + std::to_string(t.rows) + " rows here, none there");
      continue;
    }
    const LedgerTotal& o = *it->second;
    if (others_write) {
      if (o.rows < t.rows)
        lines.push_back(name(t) + ": " + std::to_string(t.rows) + " rows here, " +
                        std::to_string(o.rows) + " there");
      there.erase(it);
      continue;
    }
    if (o.rows != t.rows)
      lines.push_back(name(t) + ": " + std::to_string(t.rows) + " rows here, " +
                      std::to_string(o.rows) + " there");
    for (size_t i = 0; i < t.sums.size(); ++i)
      if (o.sums[i] != t.sums[i])
        lines.push_back(name(t) + ": " + kLedgerTotalNames[i] + " " + std::to_string(t.sums[i]) +
                        " here, " + std::to_string(o.sums[i]) + " there");
    there.erase(it);
  }
  if (others_write) return lines;
  for (const auto& [key, t] : there)
    lines.push_back(name(*t) + ": " + std::to_string(t->rows) + " rows there, none here");
  return lines;
}

// The source's charge marks that are ahead of the destination's, per cluster.
Result<size_t> CopyMarks(const Ledger& from, const LedgerFlags& to_flags, const Ledger& to) {
  Result<std::vector<ClusterChargeMark>> source = from.AllChargeMarks();
  Result<std::vector<ClusterChargeMark>> there =
      source.ok() ? to.AllChargeMarks() : Result<std::vector<ClusterChargeMark>>(source.status());
  if (!there.ok()) return there.status();
  std::map<std::pair<std::string, std::string>, double> have;
  for (const ClusterChargeMark& m : *there)
    have[{m.cluster, m.mark.series}] = m.mark.charged_through_s;
  std::map<std::string, std::vector<ChargeMark>> ahead;
  for (const ClusterChargeMark& m : *source) {
    auto it = have.find({m.cluster, m.mark.series});
    if (it == have.end() || it->second < m.mark.charged_through_s)
      ahead[m.cluster].push_back(m.mark);
  }
  size_t copied = 0;
  for (const auto& [cluster, marks] : ahead) {
    LedgerFlags flags = to_flags;
    flags.cluster = cluster;  // marks belong to the cluster of the ledger they are written with
    Result<std::unique_ptr<Ledger>> writer = OpenLedger(flags);
    Result<size_t> added = writer.ok() ? (*writer)->Append({}, marks) : writer.status();
    if (!added.ok()) return added.status();
    copied += marks.size();
  }
  return copied;
}

int Copy(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  LedgerFlags from_flags, to_flags;
  size_t batch_rows = 5000;
  bool others_write = false;
  auto app = NewCommandApp(
      "gpuvpa ledger", "copy",
      "Copy every row and charge mark of one ledger into another (e.g. SQLite into PostgreSQL), "
      "keeping each row's cluster and id: idempotent and resumable (a re-run, or a run after an "
      "interrupted one, copies nothing twice). Ends by comparing row counts and sums per "
      "cluster, cost center and kind on both sides; exit 1 when they differ.");
  app->add_option("--from", from_flags.ledger, "the ledger to copy (a SQLite file, sqlite:PATH)");
  app->add_option("--from-url-file", from_flags.url_file,
                  "a file holding the source's URL (postgresql://...)");
  app->add_option("--to", to_flags.ledger, "the ledger to copy into (a SQLite file)");
  app->add_option("--to-url-file", to_flags.url_file,
                  "a file holding the destination's URL (postgresql://...)");
  app->add_flag("--others-write", others_write,
                "other writers add rows of the same clusters to the destination (a shared "
                "database): the comparison then only checks that every source group is there "
                "with at least its rows (each copied row is already checked equal by id)");
  app->add_option("--batch-rows", batch_rows, "rows per transaction")
      ->check(CLI::Range(size_t{1}, size_t{10000}));
  if (std::optional<int> done = ParseCommandLine(*app, args, out, err)) return *done;
  if (!from_flags.given() || !to_flags.given()) {
    err << kCopy << ": a source (--from or --from-url-file) and a destination (--to or "
        << "--to-url-file) are required\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<Ledger>> from = OpenLedger(from_flags, /*must_exist=*/true);
  Result<std::unique_ptr<Ledger>> to = from.ok() ? OpenLedger(to_flags) : from.status();
  if (!to.ok()) {
    err << kCopy << ": " << to.status().message() << "\n";
    return to.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  size_t read = 0, added = 0;
  for (int64_t after = 0;;) {
    Result<Ledger::Page> page = (*from)->ReadRows(after, batch_rows);
    Result<size_t> fresh = page.ok() ? (*to)->Append(page->rows) : page.status();
    if (!fresh.ok()) {
      err << kCopy << ": after " << read << " rows: " << fresh.status().message()
          << "\n(re-run to resume: rows already copied are skipped)\n";
      return kExitFailure;
    }
    if (page->rows.empty()) break;
    read += page->rows.size();
    added += *fresh;
    after = page->last_seq;
  }
  Result<size_t> marks = CopyMarks(**from, to_flags, **to);
  if (!marks.ok()) {
    err << kCopy << ": charge marks: " << marks.status().message() << "\n";
    return kExitFailure;
  }
  out << "copied " << read << " rows (" << added << " new) and " << *marks << " charge marks from "
      << LedgerShownAs(from_flags) << " to " << LedgerShownAs(to_flags) << "\n";
  Result<std::vector<LedgerTotal>> here = (*from)->Totals();
  Result<std::vector<LedgerTotal>> there = here.ok() ? (*to)->Totals() : here.status();
  if (!there.ok()) {
    err << kCopy << ": comparing: " << there.status().message() << "\n";
    return kExitFailure;
  }
  const std::vector<std::string> differences = Differences(*here, *there, others_write);
  if (!differences.empty()) {
    err << kCopy << ": the destination differs from the source:\n";
    for (const std::string& line : differences) err << "  " << line << "\n";
    return kExitFailure;
  }
  int64_t rows = 0;
  for (const LedgerTotal& t : *here) rows += t.rows;
  out << "verified: " << rows << " rows in " << here->size()
      << " (cluster, cost center, kind) groups; "
      << (others_write ? "each group holds at least the source's rows (--others-write)\n"
                       : "counts and money sums are equal on both sides\n");
  return kExitOk;
}

}  // namespace

int RunLedgerCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  static const std::vector<Subcommand> commands = {
      {"migrate", "create the ledger or bring its schema to this build's version", Migrate},
      {"check", "check the ledger's consistency (read-only), daily totals included", Check},
      {"copy", "copy a ledger into another (SQLite into PostgreSQL), then compare both", Copy},
  };
  return RunDispatcher("gpuvpa ledger",
                       "gpuvpa ledger: the ledger's schema, its consistency and moving it.",
                       commands, args, out, err);
}

}  // namespace gpuvpa::cmd
