#!/usr/bin/env bash
# Installs gpuvpa's build and test dependencies from Debian packages.
# Idempotent and non-interactive: safe to run on every build.
#   --with-browser  also what only the tests use: Debian's Chromium (the report tests render
#                   HTML in it) and Debian's kubectl 1.20 (kubernetes-client), extracted into
#                   build-tools/ rather than installed, so it never shadows the kubectl a
#                   cluster user already has; the Kubernetes API double is checked with it.
#                   The test command passes it; the demo and the image need neither.
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

if [ "${1:-}" = "--with-browser" ]; then
  kubectl_dir="$(cd "$(dirname "$0")/.." && pwd)/build-tools/kubernetes-client"
  if [ ! -x "$kubectl_dir/usr/bin/kubectl" ]; then
    tmp="$(mktemp -d)"
    if ! (cd "$tmp" && apt-get download -q kubernetes-client >/dev/null 2>&1); then
      sudo_cmd=""
      [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
      $sudo_cmd apt-get update -q
      (cd "$tmp" && apt-get download -q kubernetes-client)
    fi
    mkdir -p "$kubectl_dir"
    dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$kubectl_dir"
    rm -rf "$tmp"
  fi
fi
