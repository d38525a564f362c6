#!/usr/bin/env bash
# Installs the Debian/Ubuntu (or Fedora) packages rdmacm's tests and smoke test
# need, when they are missing. Runs apt-get/dnf as root, or through sudo;
# otherwise prints the exact command and exits 1.
#
#   scripts/install-deps.sh [runtime|test]   (default: test)
#
# runtime: rdma-core's libraries (librdmacm.so.1, libibverbs.so.1, providers).
# test:    runtime + the C headers and gcc for the layout test, musl-gcc for the
#          musl tests and the aarch64 cross compiler and qemu-user for the arm64
#          layout test (Debian), libuv's headers (the bench's C program on
#          libuv, bench/uv-pingpong.c), and rdma-core's tools used as peers
#          (rdma_server/rdma_client, rping, perftest), and openssl (a test certificate).
set -euo pipefail

profile=${1:-test}
debian_runtime=(librdmacm1 libibverbs1 ibverbs-providers)
debian_test=("${debian_runtime[@]}" librdmacm-dev libibverbs-dev libuv1-dev gcc libc6-dev musl-tools gcc-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++6-arm64-cross qemu-user rdmacm-utils ibverbs-utils perftest iproute2 openssl)
fedora_runtime=(librdmacm libibverbs)
fedora_test=("${fedora_runtime[@]}" rdma-core-devel libuv-devel gcc librdmacm-utils libibverbs-utils perftest iproute openssl)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else
    echo "install-deps: not root; run this yourself:" >&2
    echo "  sudo $*" >&2
    exit 1
  fi
}

if command -v dpkg-query >/dev/null; then
  if [ "$profile" = runtime ]; then wanted=("${debian_runtime[@]}"); else wanted=("${debian_test[@]}"); fi
  missing=()
  installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
  for pkg in "${wanted[@]}"; do
    # Debian 13 and Ubuntu 24.04 renamed the libraries (librdmacm1t64): either name will do.
    installed "$pkg" || installed "${pkg}t64" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
elif command -v dnf >/dev/null; then
  if [ "$profile" = runtime ]; then wanted=("${fedora_runtime[@]}"); else wanted=("${fedora_test[@]}"); fi
  missing=()
  for pkg in "${wanted[@]}"; do rpm -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && exit 0
  as_root dnf install -y "${missing[@]}"
else
  echo "install-deps: unknown package manager; install rdma-core's librdmacm and libibverbs (and their -dev headers, gcc) yourself" >&2
  exit 1
fi
