#!/usr/bin/env bash
# debian-packages.sh - unpack packages of another Debian release into a cache,
# without installing them or touching this machine's apt configuration: apt
# runs with its own sources list, lists and cache (signatures checked against
# the machine's trusted Debian keys), `apt-get download` fetches, `dpkg -x`
# unpacks. For the layout test against rdma-core 56's headers (trixie) and the
# trixie and bullseye guests of scripts/rxe-vm.sh (--distro trixie, bullseye).
#
#   scripts/debian-packages.sh SUITE PACKAGE...         prints the unpacked root
#   scripts/debian-packages.sh --depends SUITE PACKAGE  prints `apt-cache depends`
#   scripts/debian-packages.sh --download SUITE DIR PACKAGE...
#                                                       downloads the .debs into DIR
#   --refresh before the mode: update the lists first even if they are there
#   --arch ARCH before the mode: another architecture's packages (e.g. arm64,
#               for scripts/arm64-vm.sh's guest); default: this machine's
#
# Cache: ${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-debian}/SUITE/
# (SUITE-ARCH/ for another architecture; root-PACKAGES holds the files; delete
# the folder to start over).
set -euo pipefail

refresh=0
arch=$(dpkg --print-architecture)
foreign=
while :; do
  case ${1:-} in
    --refresh) refresh=1; shift ;;
    --arch) [ $# -ge 2 ] || { echo "$0: --arch needs a value" >&2; exit 2; }
            [ "$2" = "$arch" ] || foreign=-$2
            arch=$2; shift 2 ;;
    *) break ;;
  esac
done
mode=unpack
case ${1:-} in
  --depends) mode=depends; shift ;;
  --download) mode=download; shift ;;
esac
[ $# -ge 2 ] || { echo "usage: $0 [--refresh] [--arch ARCH] [--depends|--download DIR] SUITE PACKAGE..." >&2; exit 2; }
suite=$1
shift
cache=${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-debian}/$suite$foreign

# An unpacked root already there is answered before anything is written: the
# soft-RoCE guest reads this cache on a read-only file system.
# (a long list is named by its hash: a file name holds 255 bytes)
name=$(printf '%s\n' "$@" | sort | tr '\n' '+' | sed 's/+$//')
if [ ${#name} -gt 120 ]; then name=$(printf '%s\n' "$name" | sha256sum | cut -c1-16); fi
root="$cache/root-$name"
if [ "$mode" = unpack ] && [ -f "$root/.complete" ] && [ "$refresh" = 0 ]; then
  echo "$root"
  exit 0
fi

mkdir -p "$cache/lists/partial" "$cache/archives/partial" "$cache/debs"
echo "deb http://deb.debian.org/debian $suite main" > "$cache/sources.list"
apt_options=(
  -o "Dir::Etc::SourceList=$cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$cache/lists" -o "Dir::Cache=$cache" -o "Dir::Cache::Archives=$cache/archives"
  -o Dir::State::Status=/dev/null -o "APT::Architecture=$arch" -o APT::Architectures::=$arch
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root
)
update_lists() { apt-get "${apt_options[@]}" -qq update >&2; }
have_lists() { ls "$cache"/lists/*_Packages* >/dev/null 2>&1; }

case $mode in
  depends)
    if [ "$refresh" = 1 ] || ! have_lists; then update_lists; fi
    apt-cache "${apt_options[@]}" depends "$1"
    exit 0 ;;
  download)
    dir=$1
    shift
    if [ "$refresh" = 1 ] || ! have_lists; then update_lists; fi
    mkdir -p "$dir"
    # lists older than the mirror can name files it has dropped: update once and retry
    (cd "$dir" && apt-get "${apt_options[@]}" -qq download "$@" >&2) ||
      { update_lists && (cd "$dir" && apt-get "${apt_options[@]}" -qq download "$@" >&2); }
    exit 0 ;;
esac

echo "debian-packages: fetching $* from Debian $suite ($arch)" >&2
update_lists
(cd "$cache/debs" && rm -f ./*.deb && apt-get "${apt_options[@]}" -qq download "$@" >&2)
rm -rf "$root"
mkdir -p "$root"
for deb in "$cache"/debs/*.deb; do
  dpkg -x "$deb" "$root"
  printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >> "$root/.packages"
done
touch "$root/.complete"
echo "$root"
