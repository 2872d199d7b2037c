#!/usr/bin/env bash
# Installs gpuvpa's build and test dependencies from Debian packages.
# Idempotent and non-interactive: safe to run on every build.
#   --with-browser  also Debian's Chromium, which the report tests render HTML in (the test
#                   command passes it; the demo and the image do not need a browser)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev
  prometheus-cpp-dev libboost-dev libboost-system-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  redis-server prometheus libsqlite3-dev sqlite3 libhiredis-dev libssl-dev openssl nlohmann-json3-dev libyaml-cpp-dev
  clang-format clang-tidy clang libclang-rt-14-dev libcli11-dev libabsl-dev libspdlog-dev libsimdjson-dev
)

if [ "${1:-}" = "--with-browser" ]; then
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
