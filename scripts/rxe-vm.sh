#!/usr/bin/env bash
# rxe-vm.sh - run a command inside a throw-away QEMU guest that has soft-RoCE
# (rdma_rxe), for testing the rdmacm binding on machines whose own kernel has
# no RDMA stack (CI runners, containers).
#
# Usage:
#   scripts/rxe-vm.sh [--hosts N] [--distro D] [--timeout S] [-e NAME[=VALUE]]... -- COMMAND [ARGS...]
#   scripts/rxe-vm.sh --prepare        # install/download/build everything, boot nothing
#   scripts/rxe-vm.sh --help
#
#   --hosts N      1 (default) or 2 guests.
#                  1: one guest; rxe0 sits on veth0 (10.77.0.1/24, fd77::1/64),
#                     whose peer veth1 has 10.77.0.2/24 (fd77::2/64).
#                     RDMACM_TEST_ADDR=10.77.0.1.
#                  2: two guests, each with a virtio-net NIC; the NICs are joined
#                     by QEMU socket netdevs over UDP on 127.0.0.1 (one datagram
#                     per frame, a free port per guest), or with RDMACM_VM_LINK=unix
#                     by dgram netdevs over a Unix socket per guest, so RoCEv2
#                     packets really cross a link. rxe0 sits on eth0; addresses
#                     10.78.0.1 and fd78::1 (host0), 10.78.0.2 and fd78::2 (host1). COMMAND runs on
#                     both guests; output lines are prefixed "[host0] "/"[host1] ".
#   --distro D     bookworm (default, env RDMACM_VM_DISTRO), trixie or bullseye.
#                  bookworm: the guest boots the kernel the host's apt names
#                     (Debian 12: 6.1) and runs the host's own files.
#                  trixie: the guest boots Debian 13's kernel (6.12) and its
#                     root is the host's with Debian 13's glibc (2.41) and
#                     rdma-core 56 laid over it (libc6, libibverbs1,
#                     librdmacm1t64, ibverbs-providers, ibverbs-utils,
#                     rdmacm-utils, libnl-3-200, libnl-route-3-200, unpacked by
#                     scripts/debian-packages.sh into its cache, and joined to
#                     the host root with a read-only overlayfs in the guest).
#                     node and every other program stay the host's. The
#                     dpkg database stays the host's too: ask the files
#                     (readlink -f /lib/x86_64-linux-gnu/librdmacm.so.1), not dpkg.
#                     Needs the network once (Debian's archive), then the cache.
#                  bullseye: the guest boots Debian 11's kernel (5.10) with
#                     rdma-core 33 laid over the host root as for trixie
#                     (libibverbs1, librdmacm1, ibverbs-providers, ibverbs-utils,
#                     rdmacm-utils); glibc and libnl stay the host's, which are
#                     newer under the same sonames. rdma-core 33 warns on each
#                     start of the three providers the host's /etc/libibverbs.d
#                     names that it lacks (mana, erdma, irdma).
#   --timeout S    Overall limit in seconds (default 1200, env RDMACM_VM_TIMEOUT).
#   --project DIR  The folder shared writable, where COMMAND runs (default: the
#                  parent of this scripts/ folder). For an installed package,
#                  the project that has it in node_modules, whose other
#                  dependencies must be visible too even under /tmp.
#   -e, --env NAME[=VALUE]
#                  Pass an extra variable into the guest (VALUE defaults to the
#                  host's value of NAME).
#   --clock-strict Exit 123 when a guest's clock jumped even if COMMAND passed
#                  (a benchmark's figures are void then; env RDMACM_VM_CLOCK_STRICT=1).
#   --verbose      Show kernel messages (console loglevel 7) and setup steps on
#                  stderr (env RDMACM_VM_VERBOSE=1). Without it only a kernel
#                  panic's messages show.
#
# What the guest is:
#   Debian's stock kernel (the package linux-image-amd64 depends on, fetched
#   with `apt-get download` and unpacked with `dpkg -x`, never installed), an
#   initramfs built from busybox-static, TCG emulation (no KVM needed). The host
#   root file system is shared read-only with 9p and the guest chroots into it,
#   so node, rdma-core tools and perftest are the host's. The project folder
#   (--project, else the parent of this scripts/ folder, wherever it lives) is
#   shared WRITABLE and mounted at the same path, except its node_modules and
#   dist: those are read-only and cached in the guest (the host must not change
#   them during a run). /tmp, /var/tmp, /run, /dev/shm are tmpfs.
#   COMMAND runs as root in the project folder, with `ulimit -l unlimited` and
#   `ulimit -n 65536`.
#
# Environment seen by COMMAND:
#   RDMACM_IN_VM=1
#   RDMACM_TEST_ADDR     IPv4 address of the netdev under this guest's rxe device
#   RDMACM_TEST_DEVICE   rxe device name (rxe0)
#   RDMACM_TEST_NETDEV   its netdev (veth0 or eth0)
#   RDMACM_TEST_ADDRS    all guests' addresses, space-separated, in index order
#   RDMACM_TEST_ADDRS6   with --hosts 2, their IPv6 addresses (fd78::1 fd78::2)
#   RDMACM_TEST_NAME     rdmacm-device.test: the guest's /etc/hosts gives it this
#                        guest's IPv4 and IPv6 addresses (one guest: 10.77.0.1
#                        and fd77::1; two: 10.78.0.N and fd78::N)
#   RDMACM_HOST_INDEX    0 .. N-1
#   RDMACM_HOST_COUNT    N
#   RDMACM_SHARED_DIR    a writable folder shared by all guests (a host temp
#                        dir, removed afterwards), e.g. to exchange "ready" files
#   PATH                 the host's PATH (+ sbin dirs); HOME=/tmp/home (tmpfs)
#   CI and every host variable named RDMACM_* are passed through, except
#   RDMACM_VM_* and the ones the guest sets itself (RDMACM_TEST_*, RDMACM_HOST_*,
#   RDMACM_SHARED_DIR, RDMACM_IN_VM); -e passes any variable, those included.
#
# Terminal / streams:
#   stdin is a terminal -> interactive: COMMAND gets the serial console as its
#     controlling tty (e.g. `scripts/rxe-vm.sh -- node` gives a REPL). Ctrl-C
#     goes to the guest; Ctrl-A x kills the VM. The guest sends plain "\n";
#     the host terminal (QEMU keeps its output post-processing) adds "\r".
#     (Only with --hosts 1; with --hosts 2 stdin is never read.)
#   otherwise -> batch: QEMU never reads the host's stdin, COMMAND's stdin is
#     /dev/null, its stdout/stderr are pipes inside the guest that reach the
#     host's stdout/stderr separately, with plain "\n" line endings.
#   Harness and kernel messages only go to stderr.
#
# Exit status:
#   COMMAND's exit status (with --hosts 2: the first non-zero one in host index
#        order; if one host's COMMAND fails, the others get RDMACM_VM_GRACE
#        seconds to finish, then they are killed and report 125)
#   123  COMMAND failed (or with --clock-strict, ended) and a guest's clock did
#        not keep time with this host's (its clock is the TSC, which TCG reads
#        from this host's): its timeouts fired at the wrong times and its
#        times are void, so a run again is in order (scripts/test.sh runs a
#        failed pass once more)
#   124  timeout (the VMs are killed)
#   125  VM/harness failure: missing packages that could not be installed,
#        kernel download failure, guest did not boot (a guest that never
#        started its setup boots once more first, after its QEMU's exit
#        status and log are printed), rxe setup failed, QEMU died
#   130  interrupted (SIGINT/SIGTERM/SIGHUP on the host script)
#   2    usage error
#   (A COMMAND that itself exits 124/125 is indistinguishable; read stderr.)
#
# Cache: ${RDMACM_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-vm}
#   kernel/<linux-image-package>/  vmlinuz + the needed .ko files (decompressed)
#   (--distro trixie or bullseye: the kernel and the userland also pass through
#   scripts/debian-packages.sh's cache, $RDMACM_DEBIAN_CACHE)
#   initramfs-<hash>.cpio          rebuilt whenever the init script, the module
#                                  list, the kernel or busybox change
#   A second run downloads nothing. Delete the folder to start over.
#
# Other environment knobs: RDMACM_VM_MEM (MiB per guest, default 2048 for one
#   guest, 1536 for two), RDMACM_VM_SMP (default 2), RDMACM_VM_BOOT_TIMEOUT
#   (seconds until the guest must have started its setup, default 300),
#   RDMACM_VM_KERNEL_PKG (override the kernel package name),
#   RDMACM_VM_GRACE (seconds the other hosts may keep running after one host's
#   COMMAND failed, default 30), RDMACM_VM_CPU (QEMU's -cpu, default max,-erms),
#   RDMACM_VM_MONITOR (a path: QEMU's human monitor listens on that Unix socket,
#   suffixed .1 for the second guest; `info jit` there counts TCG's translations
#   and TLB flushes), RDMACM_VM_APPEND (more of the guest kernel's command line),
#   RDMACM_VM_PKU (1: the guest kernel uses protection keys; default 0, `nopku`),
#   RDMACM_VM_LINK (--hosts 2: udp, the default, or unix: lossless, QEMU 7.2 or later).
#
# Host requirements (installed with apt-get when missing, as root or with
# passwordless sudo; otherwise the exact command is printed): qemu-system-x86
# (--no-install-recommends), busybox-static, rdmacm-utils, ibverbs-utils,
# ibverbs-providers, librdmacm1, libibverbs1, perftest, iproute2.

set -euo pipefail

PROG=rxe-vm.sh
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
PROJECT_DIR=$(cd "$SCRIPT_DIR/.." && pwd -P)

EXIT_CLOCK=123
EXIT_TIMEOUT=124
EXIT_VM=125
EXIT_USAGE=2

msg() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { local code=$1; shift; msg "error: $*"; exit "$code"; }
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
# shellcheck source=vm-lib.sh
source "$SCRIPT_DIR/vm-lib.sh"

# ---------------------------------------------------------------- arguments
HOSTS=1
DISTRO=${RDMACM_VM_DISTRO:-bookworm}
TIMEOUT=${RDMACM_VM_TIMEOUT:-1200}
VERBOSE=${RDMACM_VM_VERBOSE:-0}
CLOCK_STRICT=${RDMACM_VM_CLOCK_STRICT:-0}
PREPARE_ONLY=0
EXTRA_ENV=()
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) [ $# -ge 2 ] || die $EXIT_USAGE "--hosts needs a value"; HOSTS=$2; shift 2 ;;
    --hosts=*) HOSTS=${1#*=}; shift ;;
    --distro) [ $# -ge 2 ] || die $EXIT_USAGE "--distro needs a value"; DISTRO=$2; shift 2 ;;
    --distro=*) DISTRO=${1#*=}; shift ;;
    --timeout) [ $# -ge 2 ] || die $EXIT_USAGE "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#*=}; shift ;;
    --project) [ $# -ge 2 ] || die $EXIT_USAGE "--project needs a folder"; PROJECT_DIR=$(cd "$2" && pwd -P) || die $EXIT_USAGE "no folder $2"; shift 2 ;;
    --project=*) PROJECT_DIR=$(cd "${1#*=}" && pwd -P) || die $EXIT_USAGE "no folder ${1#*=}"; shift ;;
    -e|--env) [ $# -ge 2 ] || die $EXIT_USAGE "$1 needs NAME[=VALUE]"; EXTRA_ENV+=("$2"); shift 2 ;;
    --env=*) EXTRA_ENV+=("${1#*=}"); shift ;;
    --verbose|-v) VERBOSE=1; shift ;;
    --clock-strict) CLOCK_STRICT=1; shift ;;
    --prepare) PREPARE_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die $EXIT_USAGE "unexpected argument '$1' (the command goes after --; see --help)" ;;
  esac
done
case $HOSTS in 1|2) ;; *) die $EXIT_USAGE "--hosts must be 1 or 2" ;; esac
case $DISTRO in bookworm|trixie|bullseye) ;; *) die $EXIT_USAGE "--distro must be bookworm, trixie or bullseye" ;; esac
case $TIMEOUT in ''|*[!0-9]*) die $EXIT_USAGE "--timeout must be a whole number of seconds" ;; esac
if [ "$PREPARE_ONLY" = 0 ] && [ $# -eq 0 ]; then
  die $EXIT_USAGE "no command given (usage: $PROG [--hosts N] [--timeout S] -- COMMAND [ARGS...])"
fi
CMD=("$@")
BOOT_TIMEOUT=${RDMACM_VM_BOOT_TIMEOUT:-300}
GRACE=${RDMACM_VM_GRACE:-30}
SMP=${RDMACM_VM_SMP:-2}
# The emulated CPU without ERMS: with it, glibc and the kernel copy with
# `rep movsb`, which TCG runs a byte at a time (64 KiB copies at 0.4 GB/s in
# the guest, 2.2 GB/s without; performance-notes.md, "Copies in the guest").
CPU=${RDMACM_VM_CPU:-max,-erms}
if [ "$HOSTS" = 1 ]; then MEM=${RDMACM_VM_MEM:-2048}; else MEM=${RDMACM_VM_MEM:-1536}; fi

INTERACTIVE=0
if [ -t 0 ] && [ "$HOSTS" = 1 ] && [ "$PREPARE_ONLY" = 0 ]; then INTERACTIVE=1; fi

CACHE=${RDMACM_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdmacm-vm}

vlog() { if [ "$VERBOSE" = 1 ]; then msg "$*"; fi; }

# ---------------------------------------------------------------- host packages
SUDO=()
as_root_possible() {
  if [ "$(id -u)" = 0 ]; then SUDO=(); return 0; fi
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n); return 0; fi
  return 1
}

# The guest boots Debian's linux-image-amd64 and chroots into this host, so the
# host must be Debian on amd64: said before anything is installed.
check_host_kind() {
  local arch
  arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
  [ "$arch" = amd64 ] || die $EXIT_VM "the VM needs an amd64 Debian host (this one is $arch): the guest runs this host's programs"
  [ -n "${RDMACM_VM_KERNEL_PKG:-}" ] && return 0
  apt-cache show linux-image-amd64 >/dev/null 2>&1 && return 0
  ls -d "$CACHE"/kernel/linux-image-*/ >/dev/null 2>&1 && return 0
  if as_root_possible; then
    "${SUDO[@]}" apt-get update >&2 || true
    apt-cache show linux-image-amd64 >/dev/null 2>&1 && return 0
  fi
  die $EXIT_VM "apt knows no linux-image-amd64: the VM boots Debian's kernel package, so it needs a Debian host (Ubuntu names its kernels otherwise)"
}

pkg_installed() {
  # Debian 13 and Ubuntu 24.04 renamed the libraries (librdmacm1t64): either name will do.
  local name
  for name in "$1" "${1}t64"; do
    [ "$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null || true)" = "install ok installed" ] && return 0
  done
  return 1
}

ensure_packages() {
  command -v dpkg-query >/dev/null 2>&1 || die $EXIT_VM "this script needs a Debian host (dpkg/apt)"
  check_host_kind
  local want=(qemu-system-x86 busybox-static rdmacm-utils ibverbs-utils ibverbs-providers
              librdmacm1 libibverbs1 perftest iproute2 xz-utils)
  [ "$DISTRO" = trixie ] && want+=(zstd)   # Debian 13's kernel image is zstd-compressed
  local missing=() p
  for p in "${want[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
  if ! as_root_possible; then
    msg "missing host packages: ${missing[*]}"
    msg "run as root:  apt-get update && DEBIAN_FRONTEND=noninteractive ${cmd[*]}"
    exit $EXIT_VM
  fi
  msg "installing ${missing[*]} ..."
  if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "${cmd[@]}" >&2; then
    "${SUDO[@]}" apt-get update >&2 || true
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "${cmd[@]}" >&2 ||
      die $EXIT_VM "apt-get install ${missing[*]} failed"
  fi
}

# ---------------------------------------------------------------- kernel
# Module load order (dependencies first). Missing ones (built in) are skipped.
MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
netfs fscache 9pnet 9pnet_virtio 9p configfs crc32_generic udp_tunnel ip6_udp_tunnel
ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe veth failover net_failover virtio_net sch_netem"
# trixie's and bullseye's roots are overlays; their kernels' modules are loaded in
# the order modules.dep gives (6.12 split out helpers the list above does not name).
[ "$DISTRO" != bookworm ] && MODULES="$MODULES overlay"

# scripts/debian-packages.sh (its own apt lists and cache, never the host's apt)
DEBIAN_CACHE=${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdmacm-debian}
# The packages laid over the host root: trixie's glibc and rdma-core; bullseye's
# rdma-core only (the host's newer glibc and libnl serve it, under the same sonames).
userland_packages() {
  case $DISTRO in
    trixie) echo "libc6 libibverbs1 librdmacm1t64 ibverbs-providers ibverbs-utils rdmacm-utils libnl-3-200 libnl-route-3-200" ;;
    bullseye) echo "libibverbs1 librdmacm1 ibverbs-providers ibverbs-utils rdmacm-utils" ;;
  esac
}
debian_packages() {
  [ -f "$SCRIPT_DIR/debian-packages.sh" ] || die $EXIT_VM "--distro $DISTRO needs $SCRIPT_DIR/debian-packages.sh"
  RDMACM_DEBIAN_CACHE=$DEBIAN_CACHE bash "$SCRIPT_DIR/debian-packages.sh" "$@"
}

kernel_pkg_name() {
  if [ -n "${RDMACM_VM_KERNEL_PKG:-}" ]; then echo "$RDMACM_VM_KERNEL_PKG"; return 0; fi
  if [ "$DISTRO" != bookworm ]; then
    debian_packages ${1:+--refresh} --depends "$DISTRO" linux-image-amd64 2>/dev/null |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
    return 0
  fi
  # apt-cache takes ~1 s: remember the answer until the apt lists change
  local stamp memo=$CACHE/kernel-package pkg
  stamp=$(stat -c %Y /var/lib/apt/lists /var/cache/apt/pkgcache.bin 2>/dev/null | tr '\n' . || true)
  if [ -f "$memo" ] && [ "$(sed -n 1p "$memo")" = "$stamp" ]; then sed -n 2p "$memo"; return 0; fi
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
  [ -n "$pkg" ] || return 1
  printf '%s\n%s\n' "$stamp" "$pkg" >"$memo.$$" && mv "$memo.$$" "$memo"
  echo "$pkg"
}

# Booting the uncompressed ELF vmlinux (PVH entry) instead of the bzImage
# saves the ~3 s the xz decompressor needs under TCG.
# Debian 12's is xz-compressed, Debian 13's zstd.
extract_vmlinux() { # bzImage out
  local off unpack=(xz -dc)
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
  if [ -z "$off" ] && command -v zstd >/dev/null 2>&1; then
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$1" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
    unpack=(zstd -dc)
  fi
  [ -n "$off" ] || return 1
  tail -c +"$((off + 1))" "$1" | "${unpack[@]}" >"$2.tmp" 2>/dev/null || true   # trailing garbage is fine
  if [ "$(head -c 4 "$2.tmp" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; then
    mv "$2.tmp" "$2"
  else
    rm -f "$2.tmp"; return 1
  fi
}

KDIR=
ensure_kernel() {
  local pkg
  pkg=$(kernel_pkg_name || true)
  if [ -z "$pkg" ] && [ "$DISTRO" != bookworm ]; then pkg=$(kernel_pkg_name refresh || true); fi
  if [ -z "$pkg" ] && [ "$DISTRO" = bookworm ] && as_root_possible; then
    msg "apt-cache does not know linux-image-amd64; running apt-get update"
    "${SUDO[@]}" apt-get update >&2 || true
    pkg=$(kernel_pkg_name || true)
  fi
  if [ -z "$pkg" ]; then
    # offline fallback: newest kernel already in the cache
    local k
    k=$(for k in "$CACHE"/kernel/linux-image-*/; do
          [ "$(cat "$k/.distro" 2>/dev/null || echo bookworm)" = "$DISTRO" ] && echo "$k"
        done | sort -V | tail -n 1 || true)
    if [ -n "$k" ] && [ -f "$k/.complete" ]; then pkg=$(basename "$k"); msg "using cached kernel $pkg"; fi
  fi
  [ -n "$pkg" ] || die $EXIT_VM "cannot find the kernel package behind $DISTRO's linux-image-amd64 (try: apt-get update)"
  KDIR=$CACHE/kernel/$pkg
  # A cached kernel counts only if it was unpacked with today's module list.
  if [ -f "$KDIR/.complete" ] && [ "$(cat "$KDIR/.modules" 2>/dev/null)" = "$(echo $MODULES)" ]; then
    if [ ! -f "$KDIR/vmlinux" ] && [ ! -f "$KDIR/.no-vmlinux" ]; then
      extract_vmlinux "$KDIR/vmlinuz" "$KDIR/vmlinux" || touch "$KDIR/.no-vmlinux"
    fi
    return 0
  fi

  msg "fetching kernel $pkg (apt-get download, once) ..."
  mkdir -p "$CACHE/kernel"
  local work
  work=$(mktemp -d "$CACHE/kernel/.work.XXXXXX")
  chmod 755 "$work"
  if [ "$DISTRO" != bookworm ]; then
    if ! debian_packages --download "$DISTRO" "$work" "$pkg"; then
      local fresh
      fresh=$(kernel_pkg_name refresh || true)
      if [ -n "$fresh" ] && [ "$fresh" != "$pkg" ]; then
        msg "the lists now name kernel $fresh"
        pkg=$fresh
        KDIR=$CACHE/kernel/$pkg
      fi
      debian_packages --download "$DISTRO" "$work" "$pkg" || { rm -rf "$work"; die $EXIT_VM "downloading $pkg from Debian $DISTRO failed"; }
    fi
  elif ! (cd "$work" && apt-get download "$pkg" >&2 2>/dev/null); then
    if as_root_possible; then "${SUDO[@]}" apt-get update >&2 || true; fi
    # Old lists may have named a kernel the mirror has dropped since: ask again.
    local fresh
    fresh=$(kernel_pkg_name || true)
    if [ -n "$fresh" ] && [ "$fresh" != "$pkg" ]; then
      msg "the lists now name kernel $fresh"
      pkg=$fresh
      KDIR=$CACHE/kernel/$pkg
    fi
    (cd "$work" && apt-get download "$pkg" >&2) || { rm -rf "$work"; die $EXIT_VM "apt-get download $pkg failed"; }
  fi
  dpkg -x "$work"/*.deb "$work/root" || { rm -rf "$work"; die $EXIT_VM "dpkg -x failed"; }
  local out=$work/out mdir rel m f
  mkdir -p "$out/modules"
  cp "$work"/root/boot/vmlinuz-* "$out/vmlinuz"
  # Debian 13 ships its modules under /usr/lib/modules
  mdir=$(ls -1d "$work"/root/lib/modules/*/ "$work"/root/usr/lib/modules/*/ 2>/dev/null | head -n 1 || true)
  [ -n "$mdir" ] || { rm -rf "$work"; die $EXIT_VM "$pkg has no lib/modules folder"; }
  rel=$(basename "$mdir")
  echo "$rel" >"$out/release"
  cp "$mdir/modules.builtin" "$out/modules.builtin" 2>/dev/null || true
  local load=$MODULES
  if [ "$DISTRO" != bookworm ]; then
    load=$(copy_module_closure "$mdir" "$out" $MODULES | tr '\n' ' ')
    echo $load >"$out/load-order"
    echo "$DISTRO" >"$out/.distro"
    load=   # copied already
  fi
  for m in $load; do
    f=$(find "$mdir" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" | head -n 1)
    if [ -z "$f" ]; then
      vlog "module $m not found as a file (built in?)"
      continue
    fi
    case $f in
      *.ko) cp "$f" "$out/modules/$m.ko" ;;
      *.xz) xz -dc "$f" >"$out/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$out/modules/$m.ko" ;;
      *.gz) gzip -dc "$f" >"$out/modules/$m.ko" ;;
    esac
  done
  extract_vmlinux "$out/vmlinuz" "$out/vmlinux" || rm -f "$out/vmlinux"
  echo $MODULES >"$out/.modules"
  touch "$out/.complete"
  rm -rf "$KDIR"
  mv "$out" "$KDIR"
  rm -rf "$work"
}

# ---------------------------------------------------------------- initramfs
# Stage 1 (PID 1, busybox). Mounts the host root read-only at /newroot, the
# per-run control share at /newroot/run/rdmacm, scratch tmpfs, proc/sys/dev,
# then runs stage 2 (generated per run, bash from the host) in the chroot.
read -r -d '' INIT_SCRIPT <<'EOF_INIT' || true
#!/bin/busybox sh
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
@POWER_OFF@
fail() {
  echo "rxe-vm init: $*" >/dev/console
  power_off
}
for m in @MODULES@; do
  if [ -f "/lib/modules/$m.ko" ]; then
    insmod "/lib/modules/$m.ko" 2>/dev/console || echo "rxe-vm init: insmod $m failed" >/dev/console
  fi
done
O9P=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /newroot
@ROOT_MOUNT@
mount -t tmpfs -o mode=0755 tmpfs /newroot/run || fail "cannot mount /run"
mkdir -p /newroot/run/rdmacm
mount -t 9p -o "$O9P" rdmacm_ctl /newroot/run/rdmacm || fail "cannot mount the control share"
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
ln -sf /proc/self/fd /newroot/dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
[ -d /newroot/var/tmp ] && mount -t tmpfs -o mode=1777 tmpfs /newroot/var/tmp
hostname "$(cat /newroot/run/rdmacm/hostname 2>/dev/null || echo rxe-vm)"
chroot /newroot /bin/bash /run/rdmacm/stage2.sh </dev/console >/dev/console 2>&1
power_off
EOF_INIT
# The guest's root: the host's, or (trixie, bullseye) the host's under the unpacked packages.
ROOT_MOUNT_HOST='mount -t 9p -o "$O9P,ro,cache=loose" rdmacm_root /newroot || fail "cannot mount the host root (9p)"'
read -r -d '' ROOT_MOUNT_OVERLAY <<'EOF_OVERLAY' || true
# The packages come in their own share: a layer inside another one is refused (ELOOP).
mkdir -p /host /lower
mount -t 9p -o "$O9P,ro,cache=loose" rdmacm_root /host || fail "cannot mount the host root (9p)"
mount -t 9p -o "$O9P,ro,cache=loose" rdmacm_lower /lower || fail "cannot mount the unpacked packages (9p)"
[ -d /lower/usr ] || fail "no unpacked packages at @LOWER@ on the host"
mount -t overlay -o "ro,lowerdir=/lower:/host" overlay /newroot || fail "cannot lay @LOWER@ over the host root (overlayfs)"
EOF_OVERLAY

# --distro other than bookworm: its packages, unpacked by debian-packages.sh.
LOWER=
ensure_userland() {
  [ "$DISTRO" = bookworm ] && return 0
  local packages
  packages=$(userland_packages)
  LOWER=$(debian_packages "$DISTRO" $packages) || die $EXIT_VM "cannot fetch Debian $DISTRO's packages ($packages)"
  LOWER=$(cd "$LOWER" && pwd -P)
  case $LOWER in *[!A-Za-z0-9_./+-]*) die $EXIT_VM "the unpacked packages' path $LOWER has a character overlayfs options cannot take" ;; esac
  vlog "userland: $(tr '\n' ' ' <"$LOWER/.packages")"
}

INITRD=
ensure_initramfs() {
  local bb=/bin/busybox hash mods=$MODULES
  [ -x "$bb" ] || die $EXIT_VM "$bb missing (busybox-static)"
  [ -f "$KDIR/load-order" ] && mods=$(cat "$KDIR/load-order")
  INIT_SCRIPT=${INIT_SCRIPT//@MODULES@/$(echo $mods)}
  INIT_SCRIPT=${INIT_SCRIPT//@POWER_OFF@/"$INIT_POWER_OFF"}   # quoted: bash 5.2 reads & in a bare replacement as the match
  if [ -n "$LOWER" ]; then
    INIT_SCRIPT=${INIT_SCRIPT//@ROOT_MOUNT@/${ROOT_MOUNT_OVERLAY//@LOWER@/$LOWER}}
  else
    INIT_SCRIPT=${INIT_SCRIPT//@ROOT_MOUNT@/$ROOT_MOUNT_HOST}
  fi
  hash=$( { printf '%s\n' "$INIT_SCRIPT"; cat "$KDIR/release"; ls -l "$KDIR/modules"; sha256sum "$bb"; } |
    sha256sum | cut -c1-16)
  INITRD=$CACHE/initramfs-$hash.cpio
  [ -f "$INITRD" ] && return 0
  msg "building initramfs ($INITRD) ..."
  local work
  work=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
  mkdir -p "$work/root/bin" "$work/root/lib/modules" "$work/root/proc" "$work/root/sys" "$work/root/dev" \
    "$work/root/newroot" "$work/root/etc"
  cp "$bb" "$work/root/bin/busybox"
  ln -s busybox "$work/root/bin/sh"
  cp "$KDIR"/modules/*.ko "$work/root/lib/modules/" 2>/dev/null || true
  printf '%s\n' "$INIT_SCRIPT" >"$work/root/init"
  chmod 755 "$work/root/init"
  (cd "$work/root" && find . | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) >"$work/initramfs.cpio" ||
    { rm -rf "$work"; die $EXIT_VM "cpio failed"; }
  mv "$work/initramfs.cpio" "$INITRD"
  rm -rf "$work"
  # drop stale initramfs images
  find "$CACHE" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "$(basename "$INITRD")" -mmin +60 -delete 2>/dev/null || true
}

# ---------------------------------------------------------------- stage 2
# Runs in the chroot (host's bash and tools), per guest.
read -r -d '' STAGE2 <<'EOF_STAGE2' || true
set -u
CTL=/run/rdmacm
source "$CTL/config.sh"
touch "$CTL/booted"
exec 2>/dev/ttyS1
# plain "\n": a host terminal adds the "\r" itself (QEMU keeps its OPOST/ONLCR)
stty -F /dev/ttyS1 -onlcr 2>/dev/null
export PATH="$GUEST_PATH"
log() { if [ "$VERBOSE" = 1 ]; then echo "[host$HOST_INDEX] rxe-vm: [$(cut -d" " -f1 /proc/uptime)] $*" >&2; fi; }
setup_fail() {
  echo "[host$HOST_INDEX] rxe-vm: guest setup failed: $*" >&2
  echo "$*" >"$CTL/setup-failed"
  exit 125
}
log "stage 2 started"
# fork-free sleep (process start-up is slow under TCG)
mkfifo /run/rdmacm-nap && exec 9<>/run/rdmacm-nap
nap() { read -r -t "$1" -u 9 _ || true; }

mount_share() { # tag dir [opts]
  mkdir -p "$2" || setup_fail "mkdir $2"
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144${3:+,$3}" "$1" "$2" || setup_fail "mount $1 on $2"
}
mount_share rdmacm_proj "$PROJECT_DIR"
# What the guest only reads, node_modules and dist, comes through a read-only
# export of the same folder that the guest caches: on the coherent share every
# stat and read is a round trip to the host, and the CLI took 19 s to start.
mount_share rdmacm_proj_ro /run/rdmacm-proj-ro ro,cache=loose
# (A symlink is left as it is: it resolves in the guest's own tree.)
for sub in node_modules dist; do
  if [ -d "$PROJECT_DIR/$sub" ] && [ ! -L "$PROJECT_DIR/$sub" ]; then mount --bind "/run/rdmacm-proj-ro/$sub" "$PROJECT_DIR/$sub" || setup_fail "bind $sub read-only"; fi
done
mount_share rdmacm_shared /run/rdmacm-shared
mkdir -p /tmp/home
log "shares mounted"

# network + rxe
ip link set lo up
if [ "$HOST_COUNT" = 1 ]; then
  NETDEV=veth0
  ip link add veth0 type veth peer name veth1 || setup_fail "cannot create veth pair"
  ip addr add "$MY_ADDR/24" dev veth0
  ip addr add "$PEER_VETH_ADDR/24" dev veth1
  # IPv6 too, for the IPv6 tests: unique local addresses (nodad: nothing to
  # wait for; kept when a test takes the link down); the link-local ones come
  # by themselves.
  for n in veth0 veth1; do echo 1 >"/proc/sys/net/ipv6/conf/$n/keep_addr_on_down" || setup_fail "cannot keep $n's IPv6 addresses on down"; done
  ip -6 addr add fd77::1/64 dev veth0 nodad || setup_fail "cannot add fd77::1 to veth0"
  ip -6 addr add fd77::2/64 dev veth1 nodad || setup_fail "cannot add fd77::2 to veth1"
  ip link set veth1 up
  ip link set veth0 up
else
  NETDEV=
  for n in /sys/class/net/*; do
    n=${n##*/}
    [ "$n" = lo ] && continue
    [ -e "/sys/class/net/$n/device" ] && { NETDEV=$n; break; }
  done
  [ -n "$NETDEV" ] || setup_fail "no virtio NIC found"
  ip addr add "$MY_ADDR/24" dev "$NETDEV"
  # IPv6 across the link too: host N has fd78::N+1 (RDMACM_TEST_ADDRS6),
  # kept across the link flap test's down and up.
  echo 1 >"/proc/sys/net/ipv6/conf/$NETDEV/keep_addr_on_down" || setup_fail "cannot keep $NETDEV's IPv6 addresses on down"
  ip -6 addr add "fd78::$((HOST_INDEX + 1))/64" dev "$NETDEV" nodad || setup_fail "cannot add an IPv6 address to $NETDEV"
  ip link set "$NETDEV" up
fi
rdma link add "$RXE_DEV" type rxe netdev "$NETDEV" 2>&2 || setup_fail "rdma link add $RXE_DEV type rxe netdev $NETDEV"
state=
for _ in $(seq 1 600); do
  state=$(cat "/sys/class/infiniband/$RXE_DEV/ports/1/state" 2>/dev/null || true)
  case $state in *ACTIVE*) break ;; esac
  nap 0.05
done
case $state in *ACTIVE*) ;; *) setup_fail "$RXE_DEV port not ACTIVE (state: ${state:-none})" ;; esac
log "$RXE_DEV on $NETDEV ($MY_ADDR) is ACTIVE"

# A name for this guest's addresses, both families (RDMACM_TEST_NAME), in an
# /etc/hosts of the guest's own (the root is read-only), so that tests resolve
# a name through the system resolver as a user's program does.
if [ "$HOST_COUNT" = 1 ]; then MY_ADDR6=fd77::1; else MY_ADDR6="fd78::$((HOST_INDEX + 1))"; fi
{ cat /etc/hosts; echo; printf '%s rdmacm-device.test\n%s rdmacm-device.test\n' "$MY_ADDR" "$MY_ADDR6"; } >/run/rdmacm-hosts
mount --bind /run/rdmacm-hosts /etc/hosts || setup_fail "cannot put the guest's own /etc/hosts in place"

# environment for the command
export HOME=/tmp/home USER=root LOGNAME=root SHELL=/bin/bash
export RDMACM_IN_VM=1 RDMACM_TEST_ADDR="$MY_ADDR" RDMACM_TEST_DEVICE="$RXE_DEV" RDMACM_TEST_NETDEV="$NETDEV"
export RDMACM_TEST_ADDRS="$ALL_ADDRS" RDMACM_HOST_INDEX="$HOST_INDEX" RDMACM_HOST_COUNT="$HOST_COUNT" RDMACM_TEST_NAME=rdmacm-device.test
if [ "$HOST_COUNT" != 1 ]; then
  RDMACM_TEST_ADDRS6=
  for n in $(seq 1 "$HOST_COUNT"); do RDMACM_TEST_ADDRS6="${RDMACM_TEST_ADDRS6:+$RDMACM_TEST_ADDRS6 }fd78::$n"; done
  export RDMACM_TEST_ADDRS6
fi
export RDMACM_SHARED_DIR=/run/rdmacm-shared
source "$CTL/env.sh"
ulimit -l unlimited
ulimit -n 65536 2>/dev/null || true   # servers with hundreds of connections hold an fd per completion channel
cd "$PROJECT_DIR" || setup_fail "cd $PROJECT_DIR"
# The guest clock at the command's start and end, for the host to hold against its own (clock_check).
cut -d" " -f1 /proc/uptime >"$CTL/started"

if [ "$INTERACTIVE" = 1 ]; then
  export TERM="${HOST_TERM:-vt100}"
  stty -F /dev/ttyS0 sane -onlcr ${ROWS:+rows "$ROWS"} ${COLS:+cols "$COLS"} 2>/dev/null
  setsid -c -w "${CMD[@]}" 9<&- <>/dev/ttyS0 >&0 2>&0
  rc=$?
  stty -F /dev/ttyS0 -onlcr 2>/dev/null   # drains the output queue (TCSADRAIN)
else
  stty -F /dev/ttyS0 -onlcr 2>/dev/null
  rm -f /run/rdmacm-o /run/rdmacm-e
  mkfifo /run/rdmacm-o /run/rdmacm-e
  cat /run/rdmacm-o >/dev/ttyS0 & po=$!
  cat /run/rdmacm-e >/dev/ttyS1 & pe=$!
  "${CMD[@]}" </dev/null 9<&- >/run/rdmacm-o 2>/run/rdmacm-e
  rc=$?
  log "command exited with $rc"
  # a background child may keep the pipes open: wait a bit, then cut them
  for _ in $(seq 1 20); do
    kill -0 "$po" 2>/dev/null || kill -0 "$pe" 2>/dev/null || break
    nap 0.05
  done
  kill "$po" "$pe" 2>/dev/null
  wait "$po" "$pe" 2>/dev/null
  stty -F /dev/ttyS0 -onlcr 2>/dev/null   # drains the output queue (TCSADRAIN)
fi
cut -d" " -f1 /proc/uptime >"$CTL/ended"
echo "$rc" >"$CTL/rc.tmp" && mv "$CTL/rc.tmp" "$CTL/rc"
log "exit code written; powering off"
stty -F /dev/ttyS1 -a >/dev/null 2>&1
sync
exit 0
EOF_STAGE2

# ---------------------------------------------------------------- run

# Prints a random UDP port on 127.0.0.1 that nothing is bound to, other than the given ones.
free_udp_port() {
  local port taken
  for _ in $(seq 1 50); do
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    for taken in "$@"; do [ "$port" = "$taken" ] && continue 2; done
    if ! ss -Huln "sport = :$port" 2>/dev/null | grep -q .; then echo "$port"; return 0; fi
  done
  die $EXIT_VM "no free UDP port found for the VM link"
}

main() {
  mkdir -p "$CACHE"
  # Two first runs at once would run apt-get together and unpack into the same
  # cache: one prepares, the other waits.
  exec 8>"$CACHE/.lock"
  flock 8
  ensure_packages
  ensure_kernel
  ensure_userland
  ensure_initramfs
  exec 8>&-
  if [ "$PREPARE_ONLY" = 1 ]; then msg "ready: kernel $KDIR, initramfs $INITRD"; exit 0; fi

  local qemu=qemu-system-x86_64
  command -v "$qemu" >/dev/null 2>&1 || die $EXIT_VM "$qemu not found"

  trap on_signal INT TERM HUP
  trap on_exit EXIT
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-vm.XXXXXX")
  chmod 755 "$TMP"
  mkdir -p "$TMP/shared"
  chmod 1777 "$TMP/shared"

  local guest_path=$PATH
  local d
  for d in /usr/local/sbin /usr/sbin /sbin /usr/local/bin /usr/bin /bin; do
    case ":$guest_path:" in *":$d:"*) ;; *) guest_path=$guest_path:$d ;; esac
  done

  # environment passed through
  local envfile=$TMP/env.sh
  write_guest_env "$envfile"

  local addrs=() i
  if [ "$HOSTS" = 1 ]; then addrs=(10.77.0.1); else addrs=(10.78.0.1 10.78.0.2); fi

  # The link is one datagram socket per guest, each sending to the other's: a
  # datagram link, with no Nagle. (A TCP socket netdev left Nagle on at its
  # listening end, so a RoCE responder's ACK-then-reply pair waited for the
  # peer's delayed ACK: ~25 ms per round trip.) Over UDP the host drops what
  # its receive buffer (212 KiB by default) cannot hold, and a drop at a
  # stream's tail stalls RC until its ACK timeout; over Unix sockets
  # (RDMACM_VM_LINK=unix) a full queue makes the sender wait and QEMU holds
  # the frame back. The bench's two-guest rows use unix; the tests keep udp,
  # which every QEMU has. (net-demo.sh's one hang over unix was rdmacm/net's,
  # fixed: docs/performance-notes.md, "The two-guest link can lose nothing".)
  local ports=()
  LINK=${RDMACM_VM_LINK:-udp}
  case "$LINK" in
    udp) ;;
    unix) "$qemu" -netdev help 2>/dev/null | grep -qx dgram || die $EXIT_VM "RDMACM_VM_LINK=unix needs QEMU's dgram netdev (QEMU 7.2 or later)" ;;
    *) die $EXIT_VM "RDMACM_VM_LINK: expected udp or unix, got '$LINK'" ;;
  esac
  # A Unix datagram queue holds 10 frames (net.unix.max_dgram_qlen): each
  # QEMU gets a network namespace of its own (it uses no network but the link)
  # where the queue holds 512, so a frame waits in QEMU only once its sender's
  # socket buffer is full. Without unshare (or that write), the queues stay at 10.
  LAUNCH=()
  if [ "$LINK" = unix ] && unshare -n true 2>/dev/null; then
    LAUNCH=(unshare -n sh -c '(echo 512 > /proc/sys/net/unix/max_dgram_qlen) 2>/dev/null; exec "$@"' sh)
  fi
  if [ "$HOSTS" = 2 ] && [ "$LINK" = udp ]; then
    local port0 port1
    port0=$(free_udp_port) || exit $EXIT_VM
    port1=$(free_udp_port "$port0") || exit $EXIT_VM
    ports=("$port0" "$port1")
  fi

  # 1, not 0: a panic turns the console verbose only from a non-zero level, so
  # a guest that dies while booting still says why.
  local loglevel=1
  [ "$VERBOSE" = 1 ] && loglevel=7
  # TSC as the clocksource: without it the guest falls back to an emulated HPET
  # and every clock read (performance.now, clock_gettime) is a syscall plus an
  # MMIO exit, about 2.6 µs, which lands inside every timed sample.
  # nopku: with protection keys on, PKRU was written around each sleep of a Node
  # process, and TCG flushes its whole software TLB on each write (hardware spends
  # a few cycles). Node's events ping-pong read p50 460-602 µs with them and
  # 198-276 without; C's stayed put (docs/performance-notes.md).
  local pku=nopku; [ "${RDMACM_VM_PKU:-0}" = 1 ] && pku=
  local append="console=ttyS1 loglevel=$loglevel panic=-1 mitigations=off random.trust_cpu=on 8250.nr_uarts=2 clocksource=tsc tsc=reliable${pku:+ $pku}${RDMACM_VM_APPEND:+ $RDMACM_VM_APPEND}"
  local kernel=$KDIR/vmlinuz
  [ -f "$KDIR/vmlinux" ] && kernel=$KDIR/vmlinux
  local bios=()
  [ -f /usr/share/qemu/qboot.rom ] && bios=(-bios /usr/share/qemu/qboot.rom)

  local rows='' cols=''
  if [ "$INTERACTIVE" = 1 ]; then
    rows=$(stty size 2>/dev/null | cut -d' ' -f1 || true)
    cols=$(stty size 2>/dev/null | cut -d' ' -f2 || true)
    STTY_SAVED=$(stty -g 2>/dev/null || true)
  fi

  # A guest that never started its setup (QEMU exited, or no sign within
  # BOOT_TIMEOUT) boots once more, since nothing ran yet; what the first
  # attempt left is printed first.
  local attempt result started_at run_start=$SECONDS
  local -a qemu_status=() qemu_seconds=() seen_started=() seen_ended=()
  for attempt in 1 2; do
    launch_guests
    supervise
    if [ "$attempt" = 1 ] && [ "$result" != timeout ] && nothing_started && ! all_booted; then
      for ((i = 0; i < HOSTS; i++)); do
        [ -f "$TMP/ctl$i/booted" ] && continue
        msg "$(host_prefix "$i")the guest did not boot: $(boot_failure "$i"); booting it again (once)"
        sed 's/^/  qemu: /' "$TMP/qemu$i.log" >&2 || true
      done
      for ((i = 0; i < HOSTS; i++)); do rm -rf "$TMP/ctl$i" "$TMP/err$i" "$TMP/out$i" "$TMP/qemu$i.log"; done
      PIDS=(); HELPERS=(); qemu_status=(); qemu_seconds=(); seen_started=(); seen_ended=()
      continue
    fi
    break
  done
  report_and_exit
}

# The guests' QEMU processes, one per host, with their consoles forwarded
# (main's locals: args pieces, addresses, ports, terminal size).
launch_guests() {
  local i
  exec 3<&0
  for ((i = 0; i < HOSTS; i++)); do
    local ctl=$TMP/ctl$i
    mkdir -p "$ctl"
    chmod 777 "$ctl"
    printf '%s\n' "$STAGE2" >"$ctl/stage2.sh"
    cp "$envfile" "$ctl/env.sh"
    echo "rxe-vm$i" >"$ctl/hostname"
    {
      printf 'PROJECT_DIR=%q\n' "$PROJECT_DIR"
      printf 'HOST_INDEX=%q\nHOST_COUNT=%q\n' "$i" "$HOSTS"
      printf 'MY_ADDR=%q\nPEER_VETH_ADDR=%q\nALL_ADDRS=%q\n' "${addrs[$i]}" 10.77.0.2 "${addrs[*]}"
      printf 'RXE_DEV=rxe0\nINTERACTIVE=%q\nVERBOSE=%q\n' "$INTERACTIVE" "$VERBOSE"
      printf 'GUEST_PATH=%q\nHOST_TERM=%q\nROWS=%q\nCOLS=%q\n' "$guest_path" "${TERM:-}" "$rows" "$cols"
      declare -p CMD
    } >"$ctl/config.sh"

    local args=(-accel tcg -cpu "$CPU" -smp "$SMP" -m "$MEM" -nodefaults -no-user-config -display none
      -vga none -no-reboot "${bios[@]}" -kernel "$kernel" -initrd "$INITRD" -append "$append"
      -virtfs "local,path=/,mount_tag=rdmacm_root,security_model=none,readonly=on,multidevs=remap"
      ${LOWER:+-virtfs "local,path=$(q9p "$LOWER"),mount_tag=rdmacm_lower,security_model=none,readonly=on"}
      -virtfs "local,path=$(q9p "$ctl"),mount_tag=rdmacm_ctl,security_model=none"
      -virtfs "local,path=$(q9p "$PROJECT_DIR"),mount_tag=rdmacm_proj,security_model=none,multidevs=remap"
      -virtfs "local,path=$(q9p "$PROJECT_DIR"),mount_tag=rdmacm_proj_ro,security_model=none,readonly=on,multidevs=remap"
      -virtfs "local,path=$(q9p "$TMP/shared"),mount_tag=rdmacm_shared,security_model=none")
    if [ "$HOSTS" = 1 ]; then
      args+=(-nic none)
    else
      if [ "$LINK" = unix ]; then
        args+=(-netdev "dgram,id=n0,local.type=unix,local.path=$TMP/link$i.sock,remote.type=unix,remote.path=$TMP/link$((1 - i)).sock")
      else
        local own=${ports[$i]} peer=${ports[$((1 - i))]}
        args+=(-netdev "socket,id=n0,udp=127.0.0.1:$peer,localaddr=127.0.0.1:$own")
      fi
      args+=(-device "virtio-net-pci,netdev=n0,mac=52:54:00:4d:00:0$((i + 1))")
    fi

    mkfifo "$TMP/err$i"
    if [ "$HOSTS" = 1 ]; then
      cat "$TMP/err$i" >&2 &
    else
      sed -u "s/^/[host$i] /" <"$TMP/err$i" >&2 &
    fi
    HELPERS+=($!)
    args+=(-chardev "file,id=err,path=$(q9p "$TMP/err$i")")
    if [ "$INTERACTIVE" = 1 ]; then
      # shellcheck disable=SC2054
      args+=(-chardev stdio,id=con,mux=on,signal=off -serial chardev:con -mon chardev=con,mode=readline
        -serial chardev:err)
      "$qemu" "${args[@]}" <&3 2>"$TMP/qemu$i.log" &
    else
      mkfifo "$TMP/out$i"
      if [ "$HOSTS" = 1 ]; then
        cat "$TMP/out$i" &
      else
        sed -u "s/^/[host$i] /" <"$TMP/out$i" &
      fi
      HELPERS+=($!)
      args+=(-chardev "file,id=out,path=$(q9p "$TMP/out$i")" -serial chardev:out -serial chardev:err)
      if [ -n "${RDMACM_VM_MONITOR:-}" ]; then
        local monitor=$RDMACM_VM_MONITOR; [ "$i" = 0 ] || monitor+=".$i"
        args+=(-monitor "unix:$monitor,server=on,wait=off")
      else
        args+=(-monitor none)
      fi
      "${LAUNCH[@]}" "$qemu" "${args[@]}" </dev/null >/dev/null 2>"$TMP/qemu$i.log" &
    fi
    PIDS+=($!)
    if [ "$HOSTS" = 2 ] && [ "$LINK" = udp ]; then
      # QEMU exits ("can't bind") if its port was taken since free_udp_port looked: report it here
      local ok=0
      for _ in $(seq 1 200); do
        if ss -Hulnp "sport = :${ports[$i]}" 2>/dev/null | grep -q "pid=${PIDS[$i]},"; then ok=1; break; fi
        kill -0 "${PIDS[$i]}" 2>/dev/null || break
        sleep 0.05
      done
      if [ "$ok" = 0 ]; then
        cat "$TMP/qemu$i.log" >&2 || true
        cleanup; trap - INT TERM HUP EXIT
        die $EXIT_VM "QEMU for host$i did not bind its link socket 127.0.0.1:${ports[$i]}/udp"
      fi
    fi
  done
  exec 3<&-
  started_at=$SECONDS
}

# Waits until every QEMU has ended, or the run must end: sets result to
# timeout (the whole run's limit), grace (another host's command failed) or
# noboot, and each host's QEMU exit status and seconds alive.
supervise() {
  local i p alive now failed_at=''
  local -a done_=()
  result=''
  while :; do
    alive=0
    for ((i = 0; i < HOSTS; i++)); do
      p=${PIDS[$i]}
      [ -n "${done_[$i]:-}" ] && continue
      # when the command started and ended, by this host's clock (clock_check)
      if [ -z "${seen_started[$i]:-}" ] && [ -f "$TMP/ctl$i/started" ]; then seen_started[$i]=$(host_uptime); fi
      if [ -z "${seen_ended[$i]:-}" ] && [ -f "$TMP/ctl$i/rc" ]; then seen_ended[$i]=$(host_uptime); fi
      if kill -0 "$p" 2>/dev/null; then
        alive=$((alive + 1))
        continue
      fi
      done_[$i]=1
      qemu_seconds[$i]=$((SECONDS - started_at))
      wait "$p" 2>/dev/null && qemu_status[$i]=0 || qemu_status[$i]=$?
      if [ -z "$failed_at" ] && { [ ! -f "$TMP/ctl$i/rc" ] || [ "$(cat "$TMP/ctl$i/rc")" != 0 ]; }; then
        failed_at=$SECONDS
      fi
    done
    [ "$alive" = 0 ] && break
    now=$SECONDS
    if [ $((now - run_start)) -ge "$TIMEOUT" ]; then
      result=timeout
      break
    fi
    if [ -n "$failed_at" ] && [ $((now - failed_at)) -ge "$GRACE" ]; then
      result=grace
      break
    fi
    if [ $((now - started_at)) -ge "$BOOT_TIMEOUT" ]; then
      for ((i = 0; i < HOSTS; i++)); do
        if [ ! -f "$TMP/ctl$i/booted" ]; then result=noboot; break 2; fi
      done
    fi
    sleep 0.1
  done

  if [ -n "$result" ]; then
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  fi
  for p in "${PIDS[@]}"; do await_exit "$p"; done
  # let the output forwarders finish (EOF once QEMU is gone)
  for p in "${HELPERS[@]}"; do await_exit "$p" 50 TERM; done
  if [ -n "$STTY_SAVED" ]; then stty "$STTY_SAVED" 2>/dev/null || true; STTY_SAVED=; fi
}

nothing_started() {
  local i
  for ((i = 0; i < HOSTS; i++)); do [ -f "$TMP/ctl$i/started" ] && return 1; done
  return 0
}
all_booted() {
  local i
  for ((i = 0; i < HOSTS; i++)); do [ -f "$TMP/ctl$i/booted" ] || return 1; done
  return 0
}
host_prefix() { [ "$HOSTS" = 2 ] && printf 'host%s: ' "$1"; return 0; }
host_uptime() { local up _; read -r up _ </proc/uptime; echo "$up"; }

# Whether host I's guest kept time with this host over its command, from start
# to end (its uptime then, against this host's when the files appeared, within
# 0.1 s). The guest keeps time with the TSC, which TCG reads from this host's,
# and a guest's clock has run ahead (on a host that is itself a VM, whose
# kernel marks its TSC unstable): an uptime of 5675 s in a run of 331 s, every
# timeout in it early (docs/performance-notes.md, "A guest's clock can run away").
clock_check() {
  local i=$1 ctl=$TMP/ctl$1 spans guest host
  if [ -z "${seen_started[$i]:-}" ] || [ -z "${seen_ended[$i]:-}" ] || [ ! -s "$ctl/started" ] || [ ! -s "$ctl/ended" ]; then return 0; fi
  # the two spans, printed only when they part by more than 5 s and 5 %
  spans=$(awk -v g0="$(cat "$ctl/started")" -v g1="$(cat "$ctl/ended")" -v h0="${seen_started[$i]}" -v h1="${seen_ended[$i]}" 'BEGIN {
    guest = g1 - g0; host = h1 - h0; slack = 5 + host * 0.05
    if (guest - host > slack || host - guest > slack) printf "%.0f %.0f", guest, host }')
  [ -z "$spans" ] && return 0
  read -r guest host <<<"$spans"
  msg "$(host_prefix "$i")the guest's clock did not keep time with this host's: its command ran $guest s by its clock, $host s by this host's (the guest's clock is the TSC, which TCG reads from this host's). The command's timeouts fired at the wrong times, and the times it measured are void"
  return 1
}

# Why host I has not booted: how its QEMU ended, or that it was stopped.
boot_failure() {
  qemu_end "${qemu_status[$1]:-}" "${qemu_seconds[$1]:-}" "$TMP/qemu$1.log"
}

# Each host's exit code (its command's, or why it has none), then exit with the first non-zero one.
report_and_exit() {
  local codes=() code rcfile first='' pfx i again=''
  [ "$attempt" = 2 ] && again=' again'
  for ((i = 0; i < HOSTS; i++)); do
    rcfile=$TMP/ctl$i/rc
    pfx=$(host_prefix "$i")
    if [ -f "$rcfile" ]; then
      code=$(cat "$rcfile")
    elif [ "$result" = timeout ]; then
      code=$EXIT_TIMEOUT
    elif [ "$result" = grace ]; then
      msg "${pfx}killed ${GRACE}s after another host's command failed"
      code=$EXIT_VM
    elif [ -f "$TMP/ctl$i/setup-failed" ]; then
      msg "${pfx}guest setup failed: $(cat "$TMP/ctl$i/setup-failed")"
      code=$EXIT_VM
    elif [ ! -f "$TMP/ctl$i/booted" ]; then
      msg "${pfx}the guest failed to boot${again}: $(boot_failure "$i")"
      sed 's/^/  qemu: /' "$TMP/qemu$i.log" >&2 || true
      code=$EXIT_VM
    else
      msg "${pfx}the guest stopped before the command finished (guest crash or QEMU error)${qemu_status[$i]:+; QEMU exited with status ${qemu_status[$i]}}"
      sed 's/^/  qemu: /' "$TMP/qemu$i.log" >&2 || true
      code=$EXIT_VM
    fi
    codes+=("$code")
    if [ -z "$first" ] && [ "$code" != 0 ]; then first=$code; fi
  done
  if [ "$result" = timeout ]; then
    msg "timeout: the command did not finish within ${TIMEOUT}s; the VM(s) were killed"
    first=$EXIT_TIMEOUT
  fi
  local clock_jumped=''
  for ((i = 0; i < HOSTS; i++)); do clock_check "$i" || clock_jumped=1; done
  if [ -n "$clock_jumped" ] && { [ -n "$first" ] || [ "$CLOCK_STRICT" = 1 ]; }; then
    local outcome=passed
    [ -n "$first" ] && outcome=failed
    msg "the command $outcome in a guest whose clock jumped: exit $EXIT_CLOCK (run it again)"
    first=$EXIT_CLOCK
  fi
  [ "$VERBOSE" = 1 ] && msg "exit codes: ${codes[*]}"
  trap - INT TERM HUP EXIT
  rm -rf "$TMP"
  TMP=
  exit "${first:-0}"
}
main
