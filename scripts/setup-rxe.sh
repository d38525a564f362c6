#!/usr/bin/env bash
# setup-rxe.sh - create a soft-RoCE (rdma_rxe) device on a Linux host whose
# kernel has the rdma_rxe module, so the rdmacm tests can run without RDMA
# hardware. (No RDMA stack in the kernel at all? Use scripts/rxe-vm.sh.)
#
# Usage:
#   setup-rxe.sh [NETDEV] [--name NAME] [--timeout S] [--no-install]
#       Create (idempotently) an rxe device on NETDEV (default: the interface
#       of the default route), named NAME (default rxe_<NETDEV>), with
#       `rdma link add NAME type rxe netdev NETDEV`; wait (bounded, default
#       10 s) until port 1 is ACTIVE; print the device, its GIDs, their types,
#       netdevs and IP addresses, and the RDMACM_TEST_* variables to use.
#       Running it again when our device exists just reports it (exit 0).
#   setup-rxe.sh --status
#       Report the devices this script created and all RDMA links.
#   setup-rxe.sh --teardown [NAME...]
#       Delete the devices this script created (all, or the NAMEs given).
#   setup-rxe.sh --help
#
# Needs root (except --status). It only ever deletes devices it recorded in
# its state file (/run/rdmacm-setup-rxe.devices, env RDMACM_RXE_STATE), and it
# never changes any interface.
# Missing userspace (iproute2's `rdma`, librdmacm1, libibverbs1,
# ibverbs-providers, ibverbs-utils, rdmacm-utils; Fedora: iproute, rdma-core,
# libibverbs-utils, librdmacm-utils) is installed with apt-get or dnf unless
# --no-install is given.
# It also loads crc32_generic (rdma_rxe needs it; fine if built in) and rdma_rxe.
#
# Exit status:
#   0  device ready (created now, or ours already), or status/teardown done
#   1  unexpected failure (e.g. `rdma link add` failed)
#   2  usage error
#   3  not root
#   4  userspace missing and not installed (--no-install, no apt-get/dnf, or
#      the install failed)
#   5  the kernel has no rdma_rxe module
#   6  NETDEV does not exist (or no default route to pick one from)
#   7  NETDEV is down (no IFF_UP or no carrier)
#   8  already there: an RDMA device already sits on NETDEV, or NAME is taken,
#      and it was not created by this script for this NETDEV
#   9  the port did not become ACTIVE in time (the device is kept and recorded;
#      --teardown removes it)

set -euo pipefail
# ldconfig, modprobe and rdma live in sbin, which a plain `su` leaves off PATH.
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

PROG=setup-rxe.sh
STATE=${RDMACM_RXE_STATE:-/run/rdmacm-setup-rxe.devices}

E_FAIL=1 E_USAGE=2 E_ROOT=3 E_USERSPACE=4 E_MODULE=5 E_NONETDEV=6 E_DOWN=7 E_EXISTS=8 E_INACTIVE=9

msg() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { local c=$1; shift; msg "error: $*"; exit "$c"; }
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

MODE=setup NETDEV='' NAME='' TIMEOUT=10 INSTALL=1
TEARDOWN_NAMES=()
while [ $# -gt 0 ]; do
  case $1 in
    --name) [ $# -ge 2 ] || die $E_USAGE "--name needs a value"; NAME=$2; shift 2 ;;
    --name=*) NAME=${1#*=}; shift ;;
    --timeout) [ $# -ge 2 ] || die $E_USAGE "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#*=}; shift ;;
    --no-install) INSTALL=0; shift ;;
    --status) MODE=status; shift ;;
    --teardown) MODE=teardown; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die $E_USAGE "unknown option $1 (see --help)" ;;
    *)
      if [ "$MODE" = teardown ]; then TEARDOWN_NAMES+=("$1")
      elif [ -z "$NETDEV" ]; then NETDEV=$1
      else die $E_USAGE "only one NETDEV may be given"; fi
      shift ;;
  esac
done
case $TIMEOUT in ''|*[!0-9]*) die $E_USAGE "--timeout must be whole seconds" ;; esac

is_root() { [ "$(id -u)" = 0 ]; }

# ------------------------------------------------------------ state file
state_has() { [ -f "$STATE" ] && awk -v n="$1" -v d="${2:-}" '$1 == n && (d == "" || $2 == d) { f = 1 } END { exit !f }' "$STATE"; }
state_add() { mkdir -p "$(dirname "$STATE")"; state_has "$1" "$2" || echo "$1 $2" >>"$STATE"; }
state_del() {
  [ -f "$STATE" ] || return 0
  awk -v n="$1" '$1 != n' "$STATE" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
  [ -s "$STATE" ] || rm -f "$STATE"
}
state_names() { [ -f "$STATE" ] && awk '{ print $1 }' "$STATE" || true; }

# ------------------------------------------------------------ RDMA helpers
dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
# netdev under an RDMA device (rxe/siw expose "parent"; else ask `rdma link`)
dev_netdev() {
  if [ -r "/sys/class/infiniband/$1/parent" ]; then cat "/sys/class/infiniband/$1/parent"; return; fi
  rdma link show 2>/dev/null | awk -v d="$1" '$2 ~ "^" d "/" { for (i = 1; i < NF; i++) if ($i == "netdev") { print $(i + 1); exit } }'
}
devs_on_netdev() {
  local d
  for d in /sys/class/infiniband/*; do
    [ -e "$d" ] || continue
    d=${d##*/}
    [ "$(dev_netdev "$d")" = "$1" ] && echo "$d"
  done
  return 0
}
port_state() { local s="?"; read -r s <"/sys/class/infiniband/$1/ports/1/state" 2>/dev/null || true; echo "$s"; }

gid_to_ip() { # 0000:0000:0000:0000:0000:ffff:0a4d:0001 -> 10.77.0.1 ; else IPv6 text
  local g=${1//:/}
  if [ "${g:0:24}" = 00000000000000000000ffff ]; then
    printf '%d.%d.%d.%d\n' "0x${g:24:2}" "0x${g:26:2}" "0x${g:28:2}" "0x${g:30:2}"
  else
    local out='' i
    for ((i = 0; i < 32; i += 4)); do out+=$(printf '%x' "0x${g:i:4}"); [ "$i" -lt 28 ] && out+=:; done
    echo "$out"
  fi
}

show_dev() {
  local dev=$1 nd state f idx gid type ndev ip first4=
  nd=$(dev_netdev "$dev")
  state=$(port_state "$dev")
  echo "device $dev: netdev ${nd:-?}, port 1 state ${state#*: }"
  for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
    [ -r "$f" ] || continue
    gid=
    read -r gid <"$f" 2>/dev/null || true   # builtin: the table has hundreds of entries
    case $gid in ''|0000:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
    idx=${f##*/}
    type="?" ndev="?"
    read -r type <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$idx" 2>/dev/null || true
    read -r ndev <"/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$idx" 2>/dev/null || true
    ip=$(gid_to_ip "$gid")
    printf '  gid[%s] %s  %-12s %-10s %s\n' "$idx" "$gid" "$type" "$ndev" "$ip"
    case $ip in *.*) [ -z "$first4" ] && first4=$ip ;; esac
  done
  if [ -n "$first4" ]; then
    echo "  for the tests: RDMACM_TEST_DEVICE=$dev RDMACM_TEST_ADDR=$first4"
  fi
}

# ------------------------------------------------------------ userspace
have_cmd() { local p; p=$(command -v "$1" 2>/dev/null) && [ -f "$p" ] && [ -x "$p" ]; }
# grep -c reads to the end: grep -q would stop early and, under pipefail, fail on ldconfig's SIGPIPE.
have_lib() { ldconfig -p 2>/dev/null | grep -cF -- "$1" >/dev/null; }
have_rxe_provider() {
  local f
  for f in /usr/lib/*/libibverbs/librxe-rdmav*.so /usr/lib64/libibverbs/librxe-rdmav*.so /usr/lib/libibverbs/librxe-rdmav*.so; do
    [ -e "$f" ] && return 0
  done
  return 1
}
ensure_userspace() {
  local miss=()
  have_cmd rdma || miss+=("rdma (iproute2)")
  have_lib librdmacm.so.1 || miss+=(librdmacm1)
  have_lib libibverbs.so.1 || miss+=(libibverbs1)
  have_rxe_provider || miss+=("rxe provider (ibverbs-providers)")
  [ ${#miss[@]} -eq 0 ] && return 0
  local cmd
  if command -v apt-get >/dev/null 2>&1; then
    cmd="apt-get install -y --no-install-recommends iproute2 librdmacm1 libibverbs1 ibverbs-providers"
  elif command -v dnf >/dev/null 2>&1; then
    cmd="dnf install -y iproute rdma-core libibverbs librdmacm"
  else
    die $E_USERSPACE "missing RDMA userspace: ${miss[*]}; install rdma-core's tools and libraries with your package manager"
  fi
  if [ "$INSTALL" = 0 ]; then
    die $E_USERSPACE "missing RDMA userspace: ${miss[*]}; install it with: $cmd"
  fi
  msg "installing missing RDMA userspace (${miss[*]}): $cmd"
  if [ "${cmd%% *}" = apt-get ]; then
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $cmd >&2 ||
      { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive $cmd >&2; } ||
      die $E_USERSPACE "installing failed; run: apt-get update && $cmd"
  else
    # shellcheck disable=SC2086
    $cmd >&2 || die $E_USERSPACE "installing failed; run: $cmd"
  fi
}

module_hint() {
  local id=
  # shellcheck disable=SC1091
  [ -r /etc/os-release ] && id=$(. /etc/os-release && echo "${ID:-} ${ID_LIKE:-}")
  case " $id " in
    *" ubuntu "*) echo "on Ubuntu it is in linux-modules-extra-$(uname -r) (apt-get install linux-modules-extra-$(uname -r))" ;;
    *" debian "*) echo "on Debian the stock kernel (linux-image-amd64) ships it; a custom/cloud kernel may not" ;;
    *" fedora "*|*" rhel "*|*" centos "*) echo "on Fedora it is in kernel-modules-extra (dnf install kernel-modules-extra-$(uname -r)); RHEL kernels may not ship it" ;;
    *) echo "Debian: linux-image-*, Ubuntu: linux-modules-extra-$(uname -r), Fedora: kernel-modules-extra" ;;
  esac
}

ensure_module() {
  [ -d /sys/module/rdma_rxe ] && return 0
  modprobe crc32_generic 2>/dev/null || true   # may be built in
  if ! modprobe rdma_rxe 2>/dev/null; then
    die $E_MODULE "the running kernel ($(uname -r)) has no rdma_rxe module; $(module_hint). Without it, use scripts/rxe-vm.sh"
  fi
}

# ------------------------------------------------------------ modes
do_status() {
  local n any=0
  echo "state file: $STATE"
  for n in $(state_names); do
    any=1
    if dev_exists "$n"; then show_dev "$n"; else echo "device $n: recorded but gone"; fi
  done
  [ "$any" = 1 ] || echo "no devices created by $PROG"
  echo "all RDMA links:"
  if command -v rdma >/dev/null 2>&1; then
    rdma link show 2>/dev/null | sed 's/^/  /' || true
  else
    ls /sys/class/infiniband 2>/dev/null | sed 's/^/  /' || true
  fi
  return 0
}

do_teardown() {
  is_root || die $E_ROOT "--teardown needs root (try: sudo $0 --teardown)"
  local n names=() rc=0
  if [ ${#TEARDOWN_NAMES[@]} -gt 0 ]; then names=("${TEARDOWN_NAMES[@]}"); else mapfile -t names <<<"$(state_names)"; fi
  [ -n "${names[0]:-}" ] || names=()
  if [ ${#names[@]} -eq 0 ]; then echo "nothing to tear down"; return 0; fi
  for n in "${names[@]}"; do
    if ! state_has "$n"; then msg "$n was not created by $PROG; leaving it alone"; rc=$E_EXISTS; continue; fi
    if dev_exists "$n"; then
      if rdma link delete "$n"; then echo "deleted $n"; else msg "rdma link delete $n failed"; rc=$E_FAIL; continue; fi
    else
      echo "$n already gone"
    fi
    state_del "$n"
  done
  return $rc
}

wait_active() { # dev
  local i s
  for ((i = 0; i < TIMEOUT * 10; i++)); do
    s=$(port_state "$1")
    case $s in *ACTIVE*) return 0 ;; esac
    sleep 0.1
  done
  s=$(port_state "$1")
  case $s in *ACTIVE*) return 0 ;; esac
  return 1
}

do_setup() {
  is_root || die $E_ROOT "creating an rxe device needs root (try: sudo $0 ${NETDEV:+$NETDEV }${NAME:+--name $NAME})"
  ensure_userspace
  if [ -z "$NETDEV" ]; then
    NETDEV=$(ip -o route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
    [ -n "$NETDEV" ] || die $E_NONETDEV "no default route; name the interface: $PROG NETDEV"
  fi
  [ -e "/sys/class/net/$NETDEV" ] || die $E_NONETDEV "network interface '$NETDEV' does not exist (see: ip -br link)"
  local flags carrier
  flags=$(cat "/sys/class/net/$NETDEV/flags")
  if [ $((flags & 1)) = 0 ]; then die $E_DOWN "interface $NETDEV is down; bring it up first: ip link set $NETDEV up"; fi
  carrier=$(cat "/sys/class/net/$NETDEV/carrier" 2>/dev/null || echo 0)
  [ "$carrier" = 1 ] || die $E_DOWN "interface $NETDEV has no carrier (link down); fix the link, then run again"
  [ "$NETDEV" != lo ] || die $E_USAGE "rxe does not work on the loopback interface; use a real interface or a veth pair"
  [ -n "$NAME" ] || NAME=rxe_$NETDEV
  ensure_module

  if dev_exists "$NAME"; then
    if state_has "$NAME" "$NETDEV" && [ "$(dev_netdev "$NAME")" = "$NETDEV" ]; then
      msg "$NAME already exists (created by $PROG) on $NETDEV"
    else
      die $E_EXISTS "an RDMA device named $NAME already exists (on $(dev_netdev "$NAME" || echo '?')) and was not created by $PROG for $NETDEV; pick another --name or use that device"
    fi
  else
    local others
    others=$(devs_on_netdev "$NETDEV" | tr '\n' ' ')
    if [ -n "${others// /}" ]; then
      die $E_EXISTS "already there: RDMA device(s) ${others% } already on $NETDEV; use it (RDMACM_TEST_DEVICE=${others%% *}) or remove it first"
    fi
    rdma link add "$NAME" type rxe netdev "$NETDEV" || die $E_FAIL "rdma link add $NAME type rxe netdev $NETDEV failed (see dmesg)"
    state_add "$NAME" "$NETDEV"
    msg "created $NAME on $NETDEV"
  fi
  if ! wait_active "$NAME"; then
    show_dev "$NAME" || true
    die $E_INACTIVE "$NAME port did not become ACTIVE within ${TIMEOUT}s (state: $(port_state "$NAME")); check the link of $NETDEV; remove it with: $0 --teardown $NAME"
  fi
  show_dev "$NAME"
}

case $MODE in
  status) do_status ;;
  teardown) do_teardown ;;
  setup) do_setup ;;
esac
