#!/usr/bin/env bash
# arm64-vm.sh - run a command inside a throw-away arm64 (aarch64) QEMU guest
# with soft-RoCE (rdma_rxe), on an x86-64 Debian host: the binding's arm64 path
# (koffi's arm64 build, aarch64's struct layouts, the bound calls off) against
# a real kernel RDMA stack. npm run test:arm64 runs the smoke test in it.
#
# Usage:
#   scripts/arm64-vm.sh [--node RELEASE] [--timeout S] [--verbose] [-e NAME[=VALUE]]... [-- COMMAND [ARGS...]]
#   scripts/arm64-vm.sh --prepare        # fetch and build everything, boot nothing
#   scripts/arm64-vm.sh --help
#
#   Without COMMAND: the arm64 test (npm run test:arm64, after npm run build):
#   uname -m, ibv_devices, the platform line (scripts/platform.mjs, rdma-core
#   56 expected), bound calls off (scripts/arm64-guest-check.mjs), `rdmacm
#   smoke`, then the device tier's smoke file (RDMACM_TEST_ONLY=smoke
#   dist/tests/device/run.js), each step's guest uptime on stderr.
#
#   --node RELEASE The guest's Node: a major (22: its newest release) or a
#                  version; by default this host's version. The arm64 test
#                  checks that the guest runs that major (RDMACM_NODE_MAJOR).
#   --timeout S    Overall limit in seconds (default 900, env RDMACM_VM_TIMEOUT).
#   -e, --env NAME[=VALUE]
#                  Pass an extra variable into the guest (VALUE defaults to the
#                  host's value of NAME).
#   --verbose      Kernel messages and the guest's setup steps on stderr, with
#                  the guest's uptime (env RDMACM_VM_VERBOSE=1).
#
# What the guest is (nothing of this host's userland: it is x86-64):
#   kernel   Debian 13's linux-image-arm64 (6.12; its Image boots directly with
#            QEMU's -kernel) and the modules it needs (9p, rdma_rxe, ib_uverbs,
#            rdma_ucm, veth and what they depend on), fetched once with
#            scripts/debian-packages.sh --arch arm64 and unpacked, never installed.
#   userland Debian 13's arm64 packages unpacked with dpkg -x into one cached
#            folder ($ARM64_PACKAGES below: glibc, rdma-core 56's libraries,
#            providers and tools, iproute2, busybox-static), shared read-only
#            with 9p and mounted on the guest's /usr (and /etc copied).
#   node     the official arm64 build with koffi's arm64 prebuild, from npm
#            (scripts/arm64-node.sh RELEASE), shared read-only at /opt/rdmacm-node;
#            inside the guest that folder's node_modules/@koromix is mounted
#            over the project's, so the project's koffi loads its arm64 build.
#   init     the initramfs holds arm64 busybox-static, the modules and the init
#            script; it is the guest's root (no chroot). QEMU's virt machine,
#            -cpu max (TCG: no KVM needed, nor an arm64 host), no firmware.
#   project  the parent of this scripts/ folder, shared WRITABLE at the same
#            path; COMMAND runs there as root, with `ulimit -l unlimited`.
#   rxe      rxe0 on veth0 (10.77.0.1/24), whose peer veth1 has 10.77.0.2/24,
#            as in scripts/rxe-vm.sh --hosts 1.
#
# Environment seen by COMMAND: RDMACM_IN_VM=1, RDMACM_TEST_ADDR=10.77.0.1,
#   RDMACM_TEST_DEVICE=rxe0, RDMACM_TEST_NETDEV=veth0, HOME=/tmp/home, PATH with
#   the arm64 node first; CI and the host's RDMACM_* (but RDMACM_VM_* and those
#   the guest sets) are passed through, -e passes others.
# Streams: COMMAND's stdout reaches this script's stdout (the guest's first
#   serial port), its stderr this script's stderr (a virtio console); stdin is
#   /dev/null (no interactive mode).
# Exit status: COMMAND's; 124 timeout; 125 VM or harness failure (a guest
#   that never booted boots once more first, after QEMU's exit status, its log
#   and any kernel panic are printed); 2 usage.
#
# Caches: the kernel and the userland in scripts/debian-packages.sh's
#   ($RDMACM_DEBIAN_CACHE, trixie-arm64/), node in scripts/arm64-node.sh's, the
#   kernel's Image and modules and the initramfs in
#   ${RDMACM_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmacm-vm}/arm64/.
#   A second run downloads nothing.
# Knobs: RDMACM_VM_MEM (MiB, default 2048), RDMACM_VM_SMP (default 2),
#   RDMACM_VM_BOOT_TIMEOUT (seconds until the guest must have mounted its
#   shares, default 300).
# Host requirements (installed with apt-get when missing, as root):
#   qemu-system-arm (for qemu-system-aarch64), xz-utils, busybox-static (cpio).
set -euo pipefail

PROG=arm64-vm.sh
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
PROJECT_DIR=$(cd "$SCRIPT_DIR/.." && pwd -P)
EXIT_TIMEOUT=124
EXIT_VM=125
EXIT_USAGE=2
SUITE=trixie
ARM64_PACKAGES="libc6 libgcc-s1 libstdc++6 gcc-14-base libibverbs1 librdmacm1t64 ibverbs-providers
ibverbs-utils rdmacm-utils libnl-3-200 libnl-route-3-200 iproute2 libbpf1 libelf1t64 zlib1g libzstd1
libmnl0 libcap2 libselinux1 libpcre2-8-0 libtirpc3t64 libxtables12 libdb5.3t64 busybox-static"
# Loaded with their dependencies first (copy_module_closure); built-in ones are skipped.
# crc32_generic: rdma_rxe asks the crypto API for "crc32" (its ICRC), no module dependency names it.
MODULES="9pnet 9pnet_virtio 9p crc32_generic ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe veth"

msg() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { local code=$1; shift; msg "error: $*"; exit "$code"; }
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
# shellcheck source=vm-lib.sh
source "$SCRIPT_DIR/vm-lib.sh"

TIMEOUT=${RDMACM_VM_TIMEOUT:-900}
VERBOSE=${RDMACM_VM_VERBOSE:-0}
PREPARE_ONLY=0
EXTRA_ENV=()
NODE_RELEASE=$(node -p 'process.versions.node')
while [ $# -gt 0 ]; do
  case $1 in
    --timeout) [ $# -ge 2 ] || die $EXIT_USAGE "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#*=}; shift ;;
    --node) [ $# -ge 2 ] || die $EXIT_USAGE "--node needs a release (22, or 22.23.3)"; NODE_RELEASE=$2; shift 2 ;;
    --node=*) NODE_RELEASE=${1#*=}; shift ;;
    -e|--env) [ $# -ge 2 ] || die $EXIT_USAGE "$1 needs NAME[=VALUE]"; EXTRA_ENV+=("$2"); shift 2 ;;
    --env=*) EXTRA_ENV+=("${1#*=}"); shift ;;
    --verbose|-v) VERBOSE=1; shift ;;
    --prepare) PREPARE_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die $EXIT_USAGE "unexpected argument '$1' (the command goes after --; see --help)" ;;
  esac
done
case $TIMEOUT in ''|*[!0-9]*) die $EXIT_USAGE "--timeout must be a whole number of seconds" ;; esac
[[ $NODE_RELEASE =~ ^[0-9]+(\.[0-9]+\.[0-9]+)?$ ]] || die $EXIT_USAGE "--node takes a major (22) or a version (22.23.3)"
EXTRA_ENV+=("RDMACM_NODE_MAJOR=${NODE_RELEASE%%.*}")
# The arm64 test: every step must pass; the uptime stamps give the timings.
read -r -d '' ARM64_TEST <<'EOF_TEST' || true
stamp() { echo "arm64-vm: [$(cut -d' ' -f1 /proc/uptime) s since boot] $*" >&2; }
set -e
stamp "command started"
uname -m
ibv_devices
stamp "node starts"
node scripts/platform.mjs --step "device tier, arm64 guest: smoke" --expect-rdma-core 56 --expect-node "$RDMACM_NODE_MAJOR"
stamp "node ran the platform line"
node scripts/arm64-guest-check.mjs
stamp "rdmacm smoke starts"
node bin/rdmacm smoke
stamp "rdmacm smoke done; the device tier's smoke file starts"
RDMACM_TEST_ONLY=smoke node dist/tests/device/run.js
stamp "done"
EOF_TEST
if [ $# -gt 0 ]; then CMD=("$@"); else CMD=(sh -c "$ARM64_TEST"); fi
BOOT_TIMEOUT=${RDMACM_VM_BOOT_TIMEOUT:-300}
MEM=${RDMACM_VM_MEM:-2048}
SMP=${RDMACM_VM_SMP:-2}
CACHE=${RDMACM_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdmacm-vm}/arm64
DEBIAN_CACHE=${RDMACM_DEBIAN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdmacm-debian}
vlog() { if [ "$VERBOSE" = 1 ]; then msg "$*"; fi; }
debian_packages() { RDMACM_DEBIAN_CACHE=$DEBIAN_CACHE bash "$SCRIPT_DIR/debian-packages.sh" "$@"; }

# ---------------------------------------------------------------- host packages
ensure_host_tools() {
  command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 ||
    die $EXIT_VM "this script needs a Debian host (dpkg, apt-get): it fetches Debian's arm64 packages"
  local missing=()
  command -v qemu-system-aarch64 >/dev/null 2>&1 || missing+=(qemu-system-arm)
  command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n)
    else die $EXIT_VM "missing host packages; run as root: apt-get install --no-install-recommends ${missing[*]}"; fi
  fi
  msg "installing ${missing[*]} ..."
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { "${sudo[@]}" apt-get update >&2 || true
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; } ||
    die $EXIT_VM "apt-get install ${missing[*]} failed"
}

# ---------------------------------------------------------------- kernel
KDIR=
ensure_kernel() {
  local pkg
  pkg=$(debian_packages --arch arm64 --depends "$SUITE" linux-image-arm64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }' || true)
  if [ -z "$pkg" ]; then   # offline: the newest kernel already unpacked
    pkg=$(ls -1d "$CACHE"/kernel/linux-image-*/.complete 2>/dev/null | sort -V | tail -n 1 | xargs -r dirname | xargs -r basename || true)
    [ -n "$pkg" ] || die $EXIT_VM "cannot find the kernel package behind Debian $SUITE's linux-image-arm64"
    msg "using cached kernel $pkg"
  fi
  KDIR=$CACHE/kernel/$pkg
  if [ -f "$KDIR/.complete" ] && [ "$(cat "$KDIR/.modules")" = "$(echo $MODULES)" ]; then return 0; fi
  msg "fetching kernel $pkg (arm64, once) ..."
  mkdir -p "$CACHE/kernel"
  local work out mdir
  work=$(mktemp -d "$CACHE/kernel/.work.XXXXXX")
  debian_packages --arch arm64 --download "$SUITE" "$work" "$pkg" ||
    { rm -rf "$work"; die $EXIT_VM "downloading $pkg from Debian $SUITE failed"; }
  dpkg -x "$work"/*.deb "$work/root" || { rm -rf "$work"; die $EXIT_VM "dpkg -x $pkg failed"; }
  out=$work/out
  mkdir -p "$out/modules"
  # arm64's vmlinuz is the kernel's Image (QEMU boots it as it is); a
  # gzip-compressed one is unpacked, which -kernel takes too but slower.
  if [ "$(head -c 2 "$work"/root/boot/vmlinuz-* | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
    gzip -dc "$work"/root/boot/vmlinuz-* >"$out/Image"
  else
    cp "$work"/root/boot/vmlinuz-* "$out/Image"
  fi
  mdir=$(ls -1d "$work"/root/lib/modules/*/ "$work"/root/usr/lib/modules/*/ 2>/dev/null | head -n 1 || true)
  [ -n "$mdir" ] || { rm -rf "$work"; die $EXIT_VM "$pkg has no modules folder"; }
  basename "$mdir" >"$out/release"
  copy_module_closure "$mdir" "$out" $MODULES | tr '\n' ' ' >"$out/load-order"
  echo $MODULES >"$out/.modules"
  touch "$out/.complete"
  rm -rf "$KDIR"
  mv "$out" "$KDIR"
  rm -rf "$work"
  vlog "kernel $pkg: modules $(cat "$KDIR/load-order")"
}

USERLAND=
NODE_DIR=
ensure_userland() {
  # shellcheck disable=SC2086
  USERLAND=$(debian_packages --arch arm64 "$SUITE" $ARM64_PACKAGES) ||
    die $EXIT_VM "cannot fetch Debian $SUITE's arm64 packages ($(echo $ARM64_PACKAGES))"
  [ -x "$USERLAND/usr/bin/busybox" ] || die $EXIT_VM "$USERLAND has no usr/bin/busybox"
  NODE_DIR=$(bash "$SCRIPT_DIR/arm64-node.sh" "$NODE_RELEASE") || die $EXIT_VM "scripts/arm64-node.sh $NODE_RELEASE failed"
  vlog "userland $USERLAND: $(awk '{ printf "%s ", $1 }' "$USERLAND/.packages")"
  vlog "node $NODE_DIR"
}

# ---------------------------------------------------------------- initramfs
# PID 1 (arm64 busybox): modules, the shares, /usr from the unpacked packages,
# the project's koffi pointed at its arm64 build, rxe0 on a veth pair, then
# COMMAND (/run/rdmacm/cmd.sh); its status goes to /run/rdmacm/rc.
read -r -d '' INIT_SCRIPT <<'EOF_INIT' || true
#!/bin/busybox sh
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
@POWER_OFF@
# stderr: the virtio console (hvc0); the first serial port is COMMAND's stdout
[ -c /dev/hvc0 ] && exec 2>/dev/hvc0
VERBOSE=0
case " $(cat /proc/cmdline) " in *" rdmacm.verbose "*) VERBOSE=1 ;; esac
log() { [ "$VERBOSE" = 1 ] && echo "arm64-vm: [$(cut -d' ' -f1 /proc/uptime)] $*" >&2; return 0; }
fail() {
  echo "arm64-vm: guest setup failed: $*" >&2
  [ -d /run/rdmacm ] && echo "$*" >/run/rdmacm/setup-failed
  power_off
}
for m in $(cat /modules/load-order); do
  insmod "/modules/$m.ko" || echo "arm64-vm: insmod $m failed" >&2
done
log "modules loaded"
O9P=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /run/rdmacm /pkg /usr /opt/rdmacm-node /tmp /dev/pts /dev/shm
mount -t 9p -o "$O9P" rdmacm_ctl /run/rdmacm || fail "cannot mount the control share"
touch /run/rdmacm/booted
. /run/rdmacm/config.sh
mount -t 9p -o "$O9P,ro,cache=loose" rdmacm_pkg /pkg || fail "cannot mount the arm64 packages (9p)"
mount --bind /pkg/usr /usr || fail "cannot mount /usr"
cp -a /pkg/etc/. /etc/
mount -t 9p -o "$O9P,ro,cache=loose" rdmacm_node /opt/rdmacm-node || fail "cannot mount the arm64 node (9p)"
# The guest's own /tmp first: a project that lives under /tmp is mounted on top of it, not hidden by it.
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p "$PROJECT_DIR"
mount -t 9p -o "$O9P" rdmacm_proj "$PROJECT_DIR" || fail "cannot mount the project (9p)"
# koffi looks for its native build beside itself, in node_modules/@koromix
if [ -d "$PROJECT_DIR/node_modules/@koromix" ]; then
  mount --bind /opt/rdmacm-node/node_modules/@koromix "$PROJECT_DIR/node_modules/@koromix" ||
    fail "cannot mount koffi's arm64 build over the project's node_modules/@koromix"
fi
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mkdir -p /tmp/home /var/tmp
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
hostname arm64-vm
log "shares mounted"

export PATH=/opt/rdmacm-node/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# iproute2's ip and rdma by path: Debian's static busybox runs its own applets before PATH
ip() { /usr/bin/ip "$@"; }
ip link set lo up
ip link add veth0 type veth peer name veth1 || fail "cannot create the veth pair"
ip addr add 10.77.0.1/24 dev veth0
ip addr add 10.77.0.2/24 dev veth1
ip link set veth1 up
ip link set veth0 up
/usr/bin/rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0 type rxe netdev veth0"
state=
i=0
while [ $i -lt 600 ]; do
  state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)
  case $state in *ACTIVE*) break ;; esac
  usleep 50000
  i=$((i + 1))
done
case $state in *ACTIVE*) ;; *) fail "rxe0 port not ACTIVE (state: ${state:-none})" ;; esac
log "rxe0 on veth0 (10.77.0.1) is ACTIVE"

export HOME=/tmp/home USER=root LOGNAME=root SHELL=/bin/sh
export RDMACM_IN_VM=1 RDMACM_TEST_ADDR=10.77.0.1 RDMACM_TEST_DEVICE=rxe0 RDMACM_TEST_NETDEV=veth0
export RDMACM_TEST_ADDRS=10.77.0.1 RDMACM_HOST_INDEX=0 RDMACM_HOST_COUNT=1
. /run/rdmacm/env.sh
ulimit -l unlimited
ulimit -n 65536 2>/dev/null
cd "$PROJECT_DIR" || fail "cd $PROJECT_DIR"
touch /run/rdmacm/started
log "running the command"
# plain "\n" on both ports; stty again after the command drains their output (TCSADRAIN)
stty -F /dev/ttyAMA0 -onlcr 2>/dev/null
stty -F /dev/hvc0 -onlcr 2>/dev/null
sh /run/rdmacm/cmd.sh </dev/null >/dev/ttyAMA0
rc=$?
stty -F /dev/ttyAMA0 -onlcr 2>/dev/null
log "command exited with $rc"
echo "$rc" >/run/rdmacm/rc.tmp && mv /run/rdmacm/rc.tmp /run/rdmacm/rc
power_off
EOF_INIT

INITRD=
ensure_initramfs() {
  local bb=$USERLAND/usr/bin/busybox hash
  INIT_SCRIPT=${INIT_SCRIPT//@POWER_OFF@/"$INIT_POWER_OFF"}   # quoted: bash 5.2 reads & in a bare replacement as the match
  hash=$( { printf '%s\n' "$INIT_SCRIPT"; cat "$KDIR/release" "$KDIR/load-order"; ls -l "$KDIR/modules"; sha256sum "$bb"; } |
    sha256sum | cut -c1-16)
  INITRD=$CACHE/initramfs-$hash.cpio
  [ -f "$INITRD" ] && return 0
  msg "building the initramfs ($INITRD) ..."
  local work
  work=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
  mkdir -p "$work/root/bin" "$work/root/modules" "$work/root/proc" "$work/root/sys" "$work/root/dev" \
    "$work/root/etc" "$work/root/run" "$work/root/tmp"
  cp "$bb" "$work/root/bin/busybox"
  ln -s busybox "$work/root/bin/sh"
  # the packages are merged-/usr: the loader is /lib/ld-linux-aarch64.so.1
  ln -s usr/lib "$work/root/lib"
  cp "$KDIR"/modules/*.ko "$KDIR/load-order" "$work/root/modules/"
  printf '%s\n' "$INIT_SCRIPT" >"$work/root/init"
  chmod 755 "$work/root/init"
  (cd "$work/root" && find . | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null) >"$work/initramfs.cpio" ||
    { rm -rf "$work"; die $EXIT_VM "cpio failed"; }
  mv "$work/initramfs.cpio" "$INITRD"
  rm -rf "$work"
  find "$CACHE" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "$(basename "$INITRD")" -mmin +60 -delete 2>/dev/null || true
}

# ---------------------------------------------------------------- run

main() {
  ensure_host_tools
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.lock"
  flock 8
  ensure_kernel
  ensure_userland
  ensure_initramfs
  exec 8>&-
  if [ "$PREPARE_ONLY" = 1 ]; then msg "ready: kernel $KDIR, userland $USERLAND, node $NODE_DIR, initramfs $INITRD"; exit 0; fi

  trap on_signal INT TERM HUP
  trap on_exit EXIT
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-arm64-vm.XXXXXX")
  chmod 755 "$TMP"
  local ctl=$TMP/ctl
  mkdir -p "$ctl"
  chmod 777 "$ctl"
  printf 'PROJECT_DIR=%q\n' "$PROJECT_DIR" >"$ctl/config.sh"
  printf '%q ' "${CMD[@]}" >"$ctl/cmd.sh"
  echo >>"$ctl/cmd.sh"
  write_guest_env "$ctl/env.sh"

  # 1, not 0: a panic turns the console verbose only from a non-zero level, so
  # a guest that dies while booting still says why.
  local loglevel=1 extra=''
  if [ "$VERBOSE" = 1 ]; then loglevel=7; extra=' rdmacm.verbose'; fi
  # pauth-impdef: QEMU's own pointer-authentication hash, much cheaper under TCG than the architected one
  local args=(-M virt -accel tcg -cpu max,pauth-impdef=on -smp "$SMP" -m "$MEM" -nodefaults -no-user-config
    -display none -no-reboot -kernel "$KDIR/Image" -initrd "$INITRD"
    -append "console=hvc0 loglevel=$loglevel panic=-1 rdinit=/init$extra"
    -virtfs "local,path=$(q9p "$USERLAND"),mount_tag=rdmacm_pkg,security_model=none,readonly=on"
    -virtfs "local,path=$(q9p "$NODE_DIR"),mount_tag=rdmacm_node,security_model=none,readonly=on"
    -virtfs "local,path=$(q9p "$ctl"),mount_tag=rdmacm_ctl,security_model=none"
    -virtfs "local,path=$(q9p "$PROJECT_DIR"),mount_tag=rdmacm_proj,security_model=none,multidevs=remap"
    -nic none -monitor none
    -chardev "file,id=out,path=$(q9p "$TMP/out")" -serial chardev:out
    -chardev "file,id=err,path=$(q9p "$TMP/err")" -device virtio-serial-pci -device virtconsole,chardev=err)
  vlog "qemu-system-aarch64 ${args[*]}"

  # A guest that never booted (QEMU exited, or no sign within BOOT_TIMEOUT)
  # boots once more: nothing ran yet.
  local attempt start result p status
  for attempt in 1 2; do
    mkfifo "$TMP/out" "$TMP/err"
    cat "$TMP/out" &
    HELPERS+=($!)
    cat "$TMP/err" >&2 &
    HELPERS+=($!)
    qemu-system-aarch64 "${args[@]}" </dev/null >/dev/null 2>"$TMP/qemu.log" &
    PIDS+=($!)

    start=$SECONDS result='' p=${PIDS[0]} status=''
    while kill -0 "$p" 2>/dev/null; do
      if [ $((SECONDS - start)) -ge "$TIMEOUT" ]; then result=timeout; break; fi
      if [ $((SECONDS - start)) -ge "$BOOT_TIMEOUT" ] && [ ! -f "$ctl/booted" ]; then result=noboot; break; fi
      sleep 0.2
    done
    if [ -n "$result" ]; then kill -TERM "$p" 2>/dev/null || true
    else wait "$p" 2>/dev/null && status=0 || status=$?; fi
    await_exit "$p"
    # let the output forwarders finish (EOF once QEMU is gone)
    for p in "${HELPERS[@]}"; do await_exit "$p" 50 TERM; done
    if [ "$attempt" = 1 ] && [ "$result" != timeout ] && [ ! -f "$ctl/booted" ]; then
      msg "the guest did not boot: $(qemu_end "$status" "$((SECONDS - start))" "$TMP/qemu.log"); booting it again (once)"
      sed 's/^/  qemu: /' "$TMP/qemu.log" >&2 || true
      rm -f "$TMP/out" "$TMP/err" "$TMP/qemu.log" "$ctl/setup-failed"
      PIDS=(); HELPERS=()
      continue
    fi
    break
  done
  local code
  if [ -f "$ctl/rc" ]; then
    code=$(cat "$ctl/rc")
  elif [ "$result" = timeout ]; then
    msg "timeout: the command did not finish within ${TIMEOUT}s; the VM was killed"
    code=$EXIT_TIMEOUT
  elif [ -f "$ctl/setup-failed" ]; then
    msg "guest setup failed: $(cat "$ctl/setup-failed")"
    code=$EXIT_VM
  else
    if [ ! -f "$ctl/booted" ]; then msg "the guest failed to boot again: $(qemu_end "$status" "$((SECONDS - start))" "$TMP/qemu.log")"
    else msg "the guest stopped before the command finished (guest crash or QEMU error)"; fi
    sed 's/^/  qemu: /' "$TMP/qemu.log" >&2 || true
    code=$EXIT_VM
  fi
  vlog "boot to exit: $((SECONDS - start)) s"
  trap - INT TERM HUP EXIT
  rm -rf "$TMP"
  TMP=
  exit "$code"
}

main
