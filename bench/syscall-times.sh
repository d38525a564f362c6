#!/usr/bin/env bash
# Where an events round trip's time goes, system call by system call: runs the
# 2 B ping-pong on completion events in C (ib_send_lat -e, and
# bench/uv-pingpong.c on libuv) and in rdmacm (bench lat --wait events, with
# next() and with a completion listener) in one soft-RoCE guest, every side
# under bench/syscall-times.c, an LD_PRELOAD shim that times its doorbell
# writes, arms, event reads and epoll waits (wall and CPU) and reads its user
# and system time over a window of round trips. Counts the guest's ksoftirqd
# switches around each pair as well.
#
#   bash bench/syscall-times.sh [--rounds N]
#
# Each side rings 13,000 doorbells (one a round trip); the window is the 4,001st
# to the 12,000th. Prints one line per program: medians over its rounds and
# both sides. Raw output: bench/results/syscall-times-STAMP/. Needs a C
# compiler and the libuv, rdmacm and verbs headers (scripts/install-deps.sh test).
# docs/performance-notes.md, "An events round trip, system call by system
# call", has what it found.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/pairs.sh

# ksoftirqd_switches: the context switches of every ksoftirqd thread so far, summed (no fork per thread).
ksoftirqd_switches() {
  local dir name line total=0
  for dir in /proc/[0-9]*; do
    read -r name < "$dir/comm" 2> /dev/null || continue
    [[ $name == ksoftirqd/* ]] || continue
    while read -r line; do
      case $line in *voluntary_ctxt_switches:*) total=$((total + ${line##*:})) ;; esac
    done < "$dir/status"
  done
  echo "$total"
}

# measured NAME SERVER_CMD... -- CLIENT_CMD...: the pair with both sides under the shim, and its ksoftirqd switches.
measured() {
  local name=$1; shift
  local server=() client=()
  while [ "$1" != -- ]; do server+=("$1"); shift; done
  shift
  client=("$@")
  local before
  before=$(ksoftirqd_switches)
  pair "$RAW/$name.out" env LD_PRELOAD="$SHIM" SYSCALL_TIMES_OUT="$RAW/$name.server.json" "${server[@]}" -- env LD_PRELOAD="$SHIM" SYSCALL_TIMES_OUT="$RAW/$name.client.json" "${client[@]}"
  echo $(($(ksoftirqd_switches) - before)) > "$RAW/$name.ksoftirqd"
}

in_guest() {
  RAW=$(realpath "$1") SHIM=$(realpath "$1")/syscall-times.so
  local rounds=$2 address=$RDMACM_TEST_ADDR port=9100 r
  local lat=(node bin/rdmacm bench -I 0 lat --wait events -s 2 -n 10000 -w 3000 --json)
  local uv=("$RAW/uv-pingpong" -w 1000 -n 12000)
  for r in $(seq 1 "$rounds"); do
    say "syscall-times: round $r"
    port=$((port + 1)); measured "c-events-r$r" ib_send_lat -R -I 0 -e -s 2 -n 13000 -p $port -- ib_send_lat -R -I 0 -e -s 2 -n 13000 -p $port "$address"
    port=$((port + 1)); measured "c-libuv-r$r" "${uv[@]}" -s -p $port -- "${uv[@]}" -p $port "$address"
    port=$((port + 1)); measured "ts-next-r$r" "${lat[@]}" -p $port -- "${lat[@]}" -p $port "$address"
    port=$((port + 1)); measured "ts-listener-r$r" "${lat[@]}" --listener -p $port -- "${lat[@]}" --listener -p $port "$address"
  done
}

# One line per program: medians over its rounds and sides.
summarize() {
  node -e '
    const fs = require("node:fs"), path = require("node:path"), dir = process.argv[1];
    const median = (xs) => { const s = xs.filter(Number.isFinite).sort((a, b) => a - b); return s.length ? s[(s.length - 1) >> 1] : NaN; };
    const fixed = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "-");
    const programs = { "c-events": "ib_send_lat -e", "c-libuv": "C on libuv", "ts-next": "rdmacm, next()", "ts-listener": "rdmacm, listener" };
    const half = (text) => {
      const json = text.split("\n").filter((l) => l.startsWith("{")).pop();
      if (json) return JSON.parse(json).p50_us;
      return Number((text.split("\n").find((l) => /^\s*2\s+\d+/.test(l)) || "").trim().split(/\s+/)[4]);
    };
    console.log("per round trip and side, µs (p50 wall / CPU per call; calls per round trip in brackets); medians");
    for (const [key, label] of Object.entries(programs)) {
      const files = fs.readdirSync(dir).filter((f) => f.startsWith(key + "-r"));
      const sides = files.filter((f) => /\.(server|client)\.json$/.test(f)).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")));
      if (sides.length === 0) continue;
      const halves = files.filter((f) => f.endsWith(".out")).map((f) => half(fs.readFileSync(path.join(dir, f), "utf8")));
      const soft = files.filter((f) => f.endsWith(".ksoftirqd")).map((f) => Number(fs.readFileSync(path.join(dir, f), "utf8")) / 13000);
      const call = (name) => {
        const n = median(sides.map((s) => s[name]?.per_round_trip ?? 0));
        return n === 0 ? "-" : `${fixed(median(sides.map((s) => s[name]?.wall_p50_us)))} / ${fixed(median(sides.map((s) => s[name]?.cpu_p50_us)))} [${fixed(n, 2)}]`;
      };
      console.log(`${label}: half round trip p50 ${fixed(median(halves))}; user ${fixed(median(sides.map((s) => s.user_us)))}, system ${fixed(median(sides.map((s) => s.sys_us)))}, involuntary switches ${fixed(median(sides.map((s) => s.involuntary)), 2)}, ksoftirqd switches ${fixed(median(soft), 2)}`);
      console.log(`  doorbell ${call("doorbell")}; arm ${call("arm")}; event read ${call("event-read")}; epoll, zero timeout ${call("epoll-zero")}; epoll that may block ${call("epoll-blocking")}`);
    }
  ' "$1"
}

if [ "${1:-}" = --in-guest ]; then
  in_guest "$2" "$3"
  exit 0
fi
rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/syscall-times.sh [--rounds N]" >&2; exit 2 ;;
  esac
done
raw=$(experiment_dir syscall-times) || exit 1
bash bench/build-syscall-times.sh "$raw/syscall-times.so" || exit 1
bash scripts/rxe-vm.sh --timeout 3000 -- bash bench/syscall-times.sh --in-guest "$raw" "$rounds" || say "syscall-times: the guest session failed"
summarize "$raw"
