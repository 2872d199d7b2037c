#!/usr/bin/env bash
# The layering guard passes on this checkout and fails on each kind of planted violation,
# naming the file and the include.
set -euo pipefail
source_dir="$1"
guard="$source_dir/.ci/check-layering"
"$guard" "$source_dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
plant() {  # plant FILE INCLUDE: a tree holding one file with one include must fail the guard
  local tree="$tmp/$RANDOM$RANDOM"
  mkdir -p "$tree/$(dirname "$1")"
  printf '#include "%s"\n' "$2" >"$tree/$1"
  if "$guard" "$tree" 2>"$tree.err"; then
    echo "FAIL: the guard let $1 include $2" >&2
    exit 1
  fi
  grep -qF "$1: includes \"$2\"" "$tree.err" || {
    echo "FAIL: the guard did not name $1 and $2:" >&2
    cat "$tree.err" >&2
    exit 1
  }
}
plant core/cost/showback.cc recommender/model/fleet_store.h
plant core/cli/cli.cc cmd/commands.h
plant updater/report/report_model.cc recommender/model/fleet_store.h
plant scaler/service/scaler_core.cc updater/plan/planner.h
plant recommender/logic/recommender.cc cmd/commands.h
plant updater/daemon/updater_daemon.cc updater/cmd/commands.h
plant recommender/daemon/recommender_daemon.cc recommender/cmd/commands.h
# and what is allowed stays allowed
mkdir -p "$tmp/ok/cmd" "$tmp/ok/updater/cmd" "$tmp/ok/updater/plan"
printf '#include "recommender/model/fleet_store.h"\n#include "updater/plan/planner.h"\n' \
  >"$tmp/ok/cmd/plan_commands.cc"
printf '#include "updater/daemon/updater_daemon.h"\n' >"$tmp/ok/updater/cmd/updater_main.cc"
printf '#include "core/api/recommendation_contract.h"\n' >"$tmp/ok/updater/plan/planner.cc"
"$guard" "$tmp/ok"
echo "check_layering_test: ok"
