#!/usr/bin/env bash
# Does a Node process's wake-up explain the event-driven gaps to C? Sets
# rdmacm's ping-pongs on completion events beside C programs that pay what a
# Node process pays per wake-up under TCG (bench/wake-charge.c: WAKE_PAGES
# pages read twice after each sleep, as `uv-pingpong -t` does), in one
# soft-RoCE guest or across the two of `scripts/rxe-vm.sh --hosts 2`.
#
#   bash bench/wake-charge.sh [--hosts 2] [--rounds N]
#
# Knobs: WAKE_PAGES (1024), WAKE_ITERS (measured round trips, 1000),
# WAKE_WARMUP (the TypeScript sides' warm-up, 5000). Each round runs, in turn:
#   verbs, 2 B, inline 0: ib_send_lat -e; uv-pingpong (C on libuv); the same
#     charged; rdmacm bench lat --wait events
#   sockets, 64 B: rstream -T b; the same charged; rdmacm/net on events; on
#     adaptive (the default)
# and prints each one's half round trip (µs; ib_send_lat's typical, rstream's
# usec/xfer, the others' p50) round by round. Raw output:
# bench/results/wake-charge-STAMP/. Needs a C compiler and the libuv, rdmacm and
# verbs headers (scripts/install-deps.sh test).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/pairs.sh

# run_pair NAME SERVER_CMD... -- CLIENT_CMD...: pair (one guest) or link_pair (two), output in RAW/NAME.
run_pair() {
  if [ -n "${HOST:-}" ]; then link_pair "$@"; else local name=$1; shift; pair "$RAW/$name" "$@"; fi
}

in_guest() {
  RAW=$(realpath "$1")
  local rounds=$2 hosts=$3 pages=${WAKE_PAGES:-1024} iters=${WAKE_ITERS:-1000} warmup=${WAKE_WARMUP:-5000}
  local address
  if [ "$hosts" = 2 ]; then
    HOST=$RDMACM_HOST_INDEX SHARED=$RDMACM_SHARED_DIR
    read -r address _ <<< "$RDMACM_TEST_ADDRS"
  else
    address=$RDMACM_TEST_ADDR
  fi
  local charge=(env LD_PRELOAD="$RAW/wake-charge.so" WAKE_CHARGE_PAGES="$pages")
  local uv=("$RAW/uv-pingpong" -w 1000 -n "$iters")
  local lat=(node bin/rdmacm bench -I 0 lat --wait events -s 2 -n "$iters" -w "$warmup" --json)
  local rs=(rstream -S 64 -C 1 -I "$iters" -T b)
  local stream=(node bin/rdmacm bench stream -S 64 -C 1 -I "$iters" -w "$warmup" --json)
  local port=8900 r
  for r in $(seq 1 "$rounds"); do
    say "wake-charge: round $r"
    port=$((port + 1)); run_pair "c-events-r$r.txt" ib_send_lat -R -I 0 -e -s 2 -n "$iters" -p $port -- ib_send_lat -R -I 0 -e -s 2 -n "$iters" -p $port "$address"
    port=$((port + 1)); run_pair "c-libuv-r$r.json" "${uv[@]}" -s -p $port -- "${uv[@]}" -p $port "$address"
    port=$((port + 1)); run_pair "c-libuv-charged-r$r.json" "${uv[@]}" -t "$pages" -s -p $port -- "${uv[@]}" -t "$pages" -p $port "$address"
    port=$((port + 1)); run_pair "ts-events-r$r.json" "${lat[@]}" -p $port -- "${lat[@]}" -p $port "$address"
    port=$((port + 1)); run_pair "rstream-r$r.txt" "${rs[@]}" -b "$address" -p $port -- "${rs[@]}" -s "$address" -p $port
    port=$((port + 1)); run_pair "rstream-charged-r$r.txt" "${charge[@]}" "${rs[@]}" -b "$address" -p $port -- "${charge[@]}" "${rs[@]}" -s "$address" -p $port
    port=$((port + 1)); run_pair "socket-events-r$r.json" "${stream[@]}" --wait events -l "$address" -p $port -- "${stream[@]}" --wait events "$address" -p $port
    port=$((port + 1)); run_pair "socket-adaptive-r$r.json" "${stream[@]}" -l "$address" -p $port -- "${stream[@]}" "$address" -p $port
  done
}

# One line per variant: its half round trip in each round (the client's output).
summarize() {
  node -e '
    const fs = require("node:fs"), path = require("node:path"), dir = process.argv[1];
    const rows = new Map();
    for (const file of fs.readdirSync(dir).sort()) {
      const match = /^(.*)-r(\d+)\.(txt|json)$/.exec(file);
      if (!match) continue;
      const text = fs.readFileSync(path.join(dir, file), "utf8").trim();
      let value;
      if (match[3] === "json") value = JSON.parse(text.split("\n").pop() || "{}").p50_us;
      else if (/usec\/xfer/.test(text)) value = Number(text.split("\n").pop().trim().split(/\s+/)[7]);
      else value = Number((text.split("\n").find((l) => /^\s*2\s+\d+/.test(l)) || "").trim().split(/\s+/)[4]);
      if (!rows.has(match[1])) rows.set(match[1], []);
      rows.get(match[1])[Number(match[2]) - 1] = Number.isFinite(value) ? value.toFixed(1) : "failed";
    }
    const order = ["c-events", "c-libuv", "c-libuv-charged", "ts-events", "rstream", "rstream-charged", "socket-events", "socket-adaptive"];
    for (const name of order) if (rows.has(name)) console.log(name.padEnd(18), rows.get(name).join("  "));
  ' "$1"
}

if [ "${1:-}" = --in-guest ]; then
  in_guest "$2" "$3" "$4"
  exit 0
fi
hosts=1 rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/wake-charge.sh [--hosts 2] [--rounds N]" >&2; exit 2 ;;
  esac
done
raw=$(experiment_dir wake-charge) || exit 1
bash bench/build-wake-charge.sh "$raw/wake-charge.so" || exit 1
pass=(-e WAKE_PAGES -e WAKE_ITERS -e WAKE_WARMUP)
vm=(bash scripts/rxe-vm.sh --timeout 3000 "${pass[@]}")
[ "$hosts" = 2 ] && vm=(bash scripts/rxe-vm.sh --hosts 2 --timeout 5400 "${pass[@]}")
"${vm[@]}" -- bash bench/wake-charge.sh --in-guest "$raw" "$rounds" "$hosts" || say "wake-charge: the guest session failed"
echo "half round trip, µs, round by round (pages charged a wake-up: ${WAKE_PAGES:-1024}):"
summarize "$raw"
