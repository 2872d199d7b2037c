#!/usr/bin/env bash
# Run HERE (the build machine): builds gpuvpa-node-agent and puts it, with every shared library
# ldd lists outside glibc, into build-gpu/ for the device machine (which has no gRPC, Protobuf,
# prometheus-cpp...). Then, with the device tool: run command `bash test/gpu/agent_check.sh`,
# carry ["build-gpu"].
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build -j2 --target gpuvpa-node-agent
rm -rf build-gpu && mkdir -p build-gpu/lib
cp build/bin/gpuvpa-node-agent build-gpu/
ldd build/bin/gpuvpa-node-agent | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" build-gpu/lib/ ;;
  esac
done
du -sh build-gpu
