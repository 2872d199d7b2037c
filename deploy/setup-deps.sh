#!/usr/bin/env bash
# Installs gpuvpa's build and test dependencies from Debian packages.
# Idempotent and non-interactive: safe to run on every build.
#   --with-browser  also what only the tests use: Debian's Chromium (the report tests render
#                   HTML in it) and Debian's kubectl 1.20 (kubernetes-client), extracted into
#                   build-tools/ rather than installed, so it never shadows the kubectl a
#                   cluster user already has; the Kubernetes API double is checked with it.
#                   Also Node.js and the npm packages of test/deploy/package-lock.json
#                   (kubernetes-models and KEDA's and the Prometheus Operator's schemas) in
#                   build-tools/manifest-check, for the schema check of the rendered manifests.
#                   The test command passes it; the demo and the image need none of these.
#   --build-only    only what building the binaries needs (the container image's build stage).
set -euo pipefail

# What building the binaries needs (the image's build stage installs only these:
# --build-only).
packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev
  prometheus-cpp-dev libboost-dev libboost-system-dev libeigen3-dev
  libsqlite3-dev libpq-dev libhiredis-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev libabsl-dev libspdlog-dev libsimdjson-dev libjemalloc-dev
)
if [ "${1:-}" != "--build-only" ]; then
  # Tests, benchmarks, the demo, formatting and fuzzing: real servers and tools.
  packages+=(
    ccache libgtest-dev libgmock-dev libbenchmark-dev redis-server prometheus sqlite3 openssl postgresql-15
    curl
    clang-format clang-tidy clang libclang-rt-14-dev
  )
fi

if [ "${1:-}" = "--with-browser" ]; then
  packages+=(chromium)
  # Node.js from Debian unless some node (and its npm) is already there.
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
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
  # The manifests are rendered with a kubectl of 1.21 or later (kustomize 2.0 in Debian's 1.20
  # cannot read the shipped kustomizations); no Debian package has one.
  render="${GPUVPA_KUBECTL_RENDER:-kubectl}"
  minor="$("$render" version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -1)"
  if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
    echo "warning: no kubectl 1.21+ as '$render' (GPUVPA_KUBECTL_RENDER): deploy_test will fail" >&2
  fi
fi

if [ "${1:-}" = "--with-browser" ]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  check_dir="$root/build-tools/manifest-check"
  if ! cmp -s "$root/test/deploy/package-lock.json" "$check_dir/package-lock.json" ||
    [ ! -d "$check_dir/node_modules" ]; then
    rm -rf "$check_dir"
    mkdir -p "$check_dir"
    cp "$root/test/deploy/package.json" "$root/test/deploy/package-lock.json" "$check_dir/"
    (cd "$check_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
fi
