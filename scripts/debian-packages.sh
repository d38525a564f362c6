#!/usr/bin/env bash
# debian-packages.sh - unpack packages of another Debian release into a cache,
# without installing them or touching this machine's apt configuration: apt
# runs with its own sources list, lists and cache (signatures checked against
# the machine's trusted Debian keys), `apt-get download` fetches, `dpkg -x`
# unpacks. For the layout test against rdma-core 56's headers (trixie).
#
#   scripts/debian-packages.sh SUITE PACKAGE...    prints the unpacked root
#
# Cache: ${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-debian}/SUITE/
# (root-PACKAGES holds the files; delete the folder to start over).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 SUITE PACKAGE..." >&2; exit 2; }
suite=$1
shift
cache=${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-debian}/$suite
root="$cache/root-$(printf '%s\n' "$@" | sort | tr '\n' '+' | sed 's/+$//')"
if [ -f "$root/.complete" ]; then
  echo "$root"
  exit 0
fi

mkdir -p "$cache/lists/partial" "$cache/archives/partial" "$cache/debs"
echo "deb http://deb.debian.org/debian $suite main" > "$cache/sources.list"
apt_options=(
  -o "Dir::Etc::SourceList=$cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$cache/lists" -o "Dir::Cache=$cache" -o "Dir::Cache::Archives=$cache/archives"
  -o Dir::State::Status=/dev/null -o "APT::Architecture=$(dpkg --print-architecture)"
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root
)
echo "debian-packages: fetching $* from Debian $suite" >&2
apt-get "${apt_options[@]}" -qq update >&2
(cd "$cache/debs" && rm -f ./*.deb && apt-get "${apt_options[@]}" -qq download "$@" >&2)
rm -rf "$root"
mkdir -p "$root"
for deb in "$cache"/debs/*.deb; do
  dpkg -x "$deb" "$root"
  printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >> "$root/.packages"
done
touch "$root/.complete"
echo "$root"
