#!/usr/bin/env bash
# npm run bench: the binding against rdma-core's C tools on one soft-RoCE
# device, then the report (bench/results/latest.{json,svg} and a table).
#
#   bash bench/run.sh            # on this host's RDMA device, else in the VM
#   BENCH_VM=1 bash bench/run.sh # always in the VM
#
# Knobs (see bench/guest.sh): BENCH_REPS, BENCH_LAT_ITERS, BENCH_LAT_EVENTS_ITERS,
# BENCH_LAT_SPINNING_ITERS, BENCH_BW64_ITERS,
# BENCH_BW64K_ITERS, BENCH_CONNS, BENCH_CONN_REPS, BENCH_CONN_ROUNDS (measured setup
# rounds per process, default 5), BENCH_CONN_WARMUP (setup rounds before them,
# default 30), BENCH_PIN (0: the busy-polling pairs unpinned), the socket rows'
# BENCH_SOCK_* and BENCH_ONLY=sockets; BENCH_LINK=0 (no two-guest socket rows,
# bench/link.sh); BENCH_NEXT_NODE (the Node line of the second events row, default
# 26; 0: none); RDMACM_VM_TIMEOUT (default 2700 s: the one-guest session ran past 1800 s on 2026-11-29).
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules/koffi ] && [ -d node_modules/esbuild ] || npm ci --no-audit --no-fund
bash scripts/install-deps.sh test # perftest and cmtime, the C side of every comparison
npm run --silent build
npx --no-install tsc -p bench/tsconfig.json

stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=bench/results/raw-$stamp
mkdir -p "$raw"

# A snapshot of the build: dist/ is shared with whoever rebuilds next, and the
# guest reads this folder live. Module resolution still finds ./node_modules.
mkdir -p "$raw/app"
cp -r bin dist package.json "$raw/app/"
app=$raw/app
# The events mode's C floor on libuv (bench/uv-pingpong.c), run beside it in the guest.
bash bench/build-uv-pingpong.sh "$app/uv-pingpong" || echo "bench: bench/uv-pingpong.c did not build; its rows stay empty" >&2
# rsockets' connections per second in C (bench/rsocket-conns.c), beside rdmacm/net's.
bash bench/build-rsocket-conns.sh "$app/rsocket-conns" || echo "bench: bench/rsocket-conns.c did not build; its column stays empty" >&2
# A C loop that only spins (bench/spin-gaps.c): how often the guest itself takes a busy CPU away, beside the timer rows.
bash bench/build-spin-gaps.sh "$app/spin-gaps" || echo "bench: bench/spin-gaps.c did not build; its rows stay empty" >&2
# The events mode again on the newest Node line (scripts/node-release.sh, from the npm registry): how
# much of a wake-up is Node's own shows in the difference. BENCH_NEXT_NODE=0 leaves those rows out.
next_line=${BENCH_NEXT_NODE:-26}
if [ "$next_line" != 0 ]; then
  next_node=$(bash scripts/node-release.sh "$next_line") && export BENCH_NEXT_NODE_BIN=$next_node/bin/node ||
    echo "bench: no Node $next_line from the npm registry; its rows stay empty" >&2
fi

echo "bench: the JS side of post/poll on this host (no device needed)" >&2
node "$app/dist/bench/overhead.js" --json > "$raw/overhead.json"

# node:net against C (rstream -T s) over this host's loopback, with no emulator
# in the way: the guest's socket rows set beside what a Node socket costs natively.
if command -v rstream > /dev/null; then
  source bench/pairs.sh
  echo "bench: 64 B TCP ping-pong on this host's loopback: node:net (rdmacm bench stream --tcp), then rstream -T s" >&2
  pingpong=(-S 64 -C 1 -I 10000)
  for r in 1 2 3; do
    port=$((17590 + 2 * r))
    # `|| true`: a failed run is reported by pair and simply does not count (set -e would end the bench).
    LISTEN=tcp pair "$raw/host-tcp-64-r$r.json" node "$app/bin/rdmacm" bench stream --tcp -l 127.0.0.1 -p $port "${pingpong[@]}" -w 2000 --json -- \
      node "$app/bin/rdmacm" bench stream --tcp 127.0.0.1 -p $port "${pingpong[@]}" -w 2000 --json || true
    port=$((port + 1))
    LISTEN=tcp pair "$raw/host-ctcp-64-r$r.txt" rstream -T s -b 127.0.0.1 -p $port "${pingpong[@]}" -T b -- rstream -T s -s 127.0.0.1 -p $port "${pingpong[@]}" -T b || true
  done
fi

host_has_device() {
  [ -n "${RDMACM_TEST_DEVICE:-}" ] || { [ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; }
}
pass=()
for name in $(compgen -e | grep '^BENCH_' | grep -v '^BENCH_APP$' || true); do pass+=(-e "$name"); done
if [ "${BENCH_VM:-0}" != 1 ] && host_has_device; then
  echo "bench: on this host's RDMA device" >&2
  where="host device"
  BENCH_APP=$app bash bench/guest.sh "$raw"
else
  echo "bench: no RDMA device here; running in a soft-RoCE VM (scripts/rxe-vm.sh)" >&2
  where="qemu/TCG guest, rxe on veth"
  # 3300 s: the session took 38 minutes on 2026-11-29, before its throughput runs grew eightfold (about 2 more).
  # --clock-strict: a guest whose clock jumped measured nothing worth keeping, so the run stops (exit 123).
  bash scripts/rxe-vm.sh --clock-strict --timeout "${RDMACM_VM_TIMEOUT:-3300}" "${pass[@]}" -e BENCH_APP="$app" -- bash bench/guest.sh "$raw"
fi
# The socket rows again across a link between two guests (bench/link.sh); BENCH_LINK=0 skips them.
# On a host with its own device there is no second host to pair with: run bench/link.sh on two hosts by hand.
if [ "${BENCH_LINK:-1}" = 1 ] && [ "$where" != "host device" ]; then
  echo "bench: the socket rows across a link between two soft-RoCE guests (scripts/rxe-vm.sh --hosts 2)" >&2
  link_status=0
  # Unix datagrams: the UDP link drops frames at the host, and a drop at a stream's tail stalled a run
  # for seconds, in either tool, at random (performance-notes.md, "The two-guest link can lose nothing").
  RDMACM_VM_LINK=${RDMACM_VM_LINK:-unix} bash scripts/rxe-vm.sh --clock-strict --hosts 2 --timeout "${RDMACM_VM_TIMEOUT:-2700}" "${pass[@]}" -e BENCH_APP="$app" -- bash bench/link.sh "$raw" || link_status=$?
  if [ "$link_status" = 123 ]; then
    # a guest's clock jumped (rxe-vm.sh says so above): every time it measured is void
    mkdir -p "$raw/void" && mv "$raw"/link-* "$raw/void/" 2>/dev/null || true
    echo "bench: a guest's clock jumped in the two-guest session; its figures are void (moved to $raw/void) and its rows stay empty" >&2
  elif [ "$link_status" != 0 ]; then
    echo "bench: the two-guest session failed; its rows stay empty" >&2
  fi
fi
node "$app/dist/bench/report.js" "$raw" "$stamp" "$where"
