# vm-lib.sh - what rxe-vm.sh and arm64-vm.sh share, sourced by both (never
# run): the kernel modules a guest loads, quoting for QEMU's options, the
# environment file a guest's command starts with, the init's way out, what a
# guest that never booted is told apart by, and stopping everything they
# started, whichever way they end.
# The caller defines msg, vlog, die, EXIT_USAGE and EXTRA_ENV (its -e arguments).

# Copies the given modules and those they depend on (the "depends=" of each
# one's .modinfo: Debian's packages ship no modules.dep, and this host may have
# no depmod) into DIR/modules, decompressed, and prints them dependencies first.
# Names with no file (built in) are left out.
copy_module_closure() { # module-tree out-dir name...
  local tree=$1 out=$2 f n
  shift 2
  declare -A file=() seen=()
  while IFS= read -r f; do
    n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
    file[$n]=$f
  done < <(find "$tree" -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' -o -name '*.ko.gz')
  visit_module() {
    local m=${1//-/_} d deps
    [ -n "${seen[$m]:-}" ] && return 0
    seen[$m]=1
    f=${file[$m]:-}
    if [ -z "$f" ]; then vlog "module $m not found as a file (built in?)"; return 0; fi
    case $f in
      *.ko) cp "$f" "$out/modules/$m.ko" ;;
      *.xz) xz -dc "$f" >"$out/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$out/modules/$m.ko" ;;
      *.gz) gzip -dc "$f" >"$out/modules/$m.ko" ;;
    esac
    deps=$(tr '\0' '\n' <"$out/modules/$m.ko" | grep -a -m 1 '^depends=' | cut -d= -f2 || true)
    for d in ${deps//,/ }; do visit_module "$d"; done
    echo "$m"
  }
  for n in "$@"; do visit_module "$n"; done
}

q9p() { printf '%s' "${1//,/,,}"; }   # escape commas for QEMU options

# write_guest_env FILE: exports of CI, of the caller's RDMACM_* variables
# (not the harness's own, which the guest sets) and of each -e NAME[=VALUE].
write_guest_env() {
  local file=$1 name kv
  : >"$file"
  if [ -n "${CI+x}" ]; then printf 'export CI=%q\n' "$CI" >>"$file"; fi
  while IFS= read -r name; do
    case $name in RDMACM_VM_*|RDMACM_TEST_*|RDMACM_HOST_*|RDMACM_SHARED_DIR|RDMACM_IN_VM) continue ;; esac
    printf 'export %s=%q\n' "$name" "${!name}" >>"$file"
  done < <(compgen -e | grep '^RDMACM_' || true)
  for kv in ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"}; do
    name=${kv%%=*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die $EXIT_USAGE "bad variable name in -e $kv"
    if [[ $kv == *=* ]]; then printf 'export %s=%q\n' "$name" "${kv#*=}" >>"$file"
    else printf 'export %s=%q\n' "$name" "${!name-}" >>"$file"; fi
  done
}

# await_exit PID [TENTHS] [SIGNAL]: waits up to TENTHS tenths of a second
# (default 50) for PID to end, then sends SIGNAL (default KILL) and reaps it.
await_exit() {
  local pid=$1 tenths=${2:-50} signal=${3:-KILL}
  for _ in $(seq 1 "$tenths"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill "-$signal" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# For the guests' init scripts (at @POWER_OFF@): power_off, which first drops
# the console to level 0 when the kernel runs at 1 (where a panic still
# speaks), so that the emergency-level "reboot: Power down" does not show.
read -r -d '' INIT_POWER_OFF <<'EOF_POWER_OFF' || true
quiet=0
case " $(cat /proc/cmdline) " in *" loglevel=1 "*) quiet=1; echo 1 >/proc/sys/kernel/printk ;; esac
power_off() {
  sync
  [ "$quiet" = 1 ] && echo 0 >/proc/sys/kernel/printk
  poweroff -f
}
EOF_POWER_OFF

# qemu_end STATUS SECONDS LOG: how a guest's QEMU ended, for a guest that did
# not boot (STATUS empty: it was stopped at BOOT_TIMEOUT).
qemu_end() {
  local status=$1 secs=$2 log=$3
  if [ -z "$status" ]; then
    echo "no sign of its setup within ${BOOT_TIMEOUT}s (RDMACM_VM_BOOT_TIMEOUT); QEMU was stopped"
  elif [ "$status" -gt 128 ]; then
    echo "QEMU was killed by signal $((status - 128)) after ${secs}s"
  elif [ -s "$log" ]; then
    echo "QEMU exited with status $status after ${secs}s (its log below)"
  else
    echo "QEMU exited with status $status after ${secs}s: the kernel stopped (a panic's messages are above; a triple fault prints nothing)"
  fi
}

# What a run started: QEMU processes (PIDS), output forwarders (HELPERS), the
# terminal's settings (STTY_SAVED), the run's folder (TMP).
TMP=
PIDS=()
HELPERS=()
STTY_SAVED=
cleanup() {
  local p
  for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
  for p in ${PIDS[@]+"${PIDS[@]}"}; do await_exit "$p" 20; done
  for p in ${HELPERS[@]+"${HELPERS[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
  if [ -n "$STTY_SAVED" ]; then stty "$STTY_SAVED" 2>/dev/null || true; fi
  if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
on_signal() { trap - INT TERM HUP EXIT; msg "interrupted; stopping the VM(s)"; cleanup; exit 130; }
# Any other way out (set -e on an unexpected failure) must not leave QEMU running either.
on_exit() { trap - INT TERM HUP EXIT; cleanup; }
