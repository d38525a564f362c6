#!/usr/bin/env bash
# The measurements of `npm run bench`, in one session on one RDMA device (run by
# bench/run.sh inside the soft-RoCE VM, or on this host's own device):
# rdmacm bench vs perftest, the binding's connection setup (and its raw layer's)
# vs cmtime, and the JS-heap check. Raw outputs go to the folder given as $1;
# bench/report.ts turns them into the table.
#
#   bash bench/guest.sh RAW_DIR
#
# Needs RDMACM_TEST_ADDR (set by scripts/rxe-vm.sh): the device's IPv4 address.
# Knobs: BENCH_REPS (default 3), BENCH_LAT_ITERS (5000), BENCH_LAT_EVENTS_ITERS
# (3000, the ping-pong on the event loop when it sleeps: events),
# BENCH_LAT_SPINNING_ITERS (40000, when it seldom does: busy-poll, adaptive, whose learned budget
# spins through this guest's wake-ups; each about 1–3 s, so the 1 ms timer ticks a thousand times
# or more: 3000 adaptive round trips gave it 226–367 ticks), BENCH_LAT_SPIN_US (200: adaptive
# mode's spin budget in its second row, fixed there, longer than this guest's round trip), BENCH_FLOOR_SECONDS
# (10: how long the loops that only spin run, the timer rows' floor), BENCH_BW64_ITERS (40000),
# BENCH_BW64K_ITERS (4000; runs of a second or two: 5000 and 1000 varied twofold), BENCH_CONNS (100), BENCH_CONN_REPS (cmtime, binding
# and raw-layer triples for connection setup; default BENCH_REPS), BENCH_CONN_ROUNDS
# (measured rounds of BENCH_CONNS connections in each of the triple's processes; 5),
# BENCH_PIN (1: the busy-polling pairs run the server on CPU 0, the client on CPU 1),
# BENCH_INLINE (bytes sent inline, by both tools: -I; 0, as perftest chooses on rxe).
# Sockets (rdmacm/net against rstream and node:net TCP): BENCH_SOCK_REPS (3),
# BENCH_SOCK_LAT_ITERS (1000 round trips at 64 B and 4 KiB, after
# BENCH_SOCK_LAT_WARMUP, 5000, for the TS pairs), BENCH_SOCK_BW64K_COUNT (1024 writes
# of 64 KiB each way), BENCH_SOCK_BW1M_COUNT (64 writes of 1 MiB each way),
# BENCH_SOCK_BW_WARMUP_MIB (512: the TS pairs' throughput warm-up, each way, in
# whole iterations of the run), BENCH_SOCK_CONNS (30 connections, after
# BENCH_SOCK_CONNS_WARMUP, 400: V8's compiler needs them; after 100 it was still settling),
# BENCH_SOCK_HEAP_MIB (1024 MiB streamed for the heap check, after 32: the target's 1 GiB),
# BENCH_SOCK_CPU_ITERS (4: rstream's longer throughput run, whose CPU time less
# the one-iteration run's is its CPU for the extra bytes).
# BENCH_ONLY=sockets runs only the socket rows (and ib_send_bw -e, their reference).
set -uo pipefail
# Everything in one block that bash reads whole before running it: an edit to
# this file during a run (the guest reads the project folder live) cannot
# change what the run does.
{
cd "$(dirname "$0")/.."
RAW=${1:?usage: guest.sh RAW_DIR}
mkdir -p "$RAW"
ADDR=${RDMACM_TEST_ADDR:?RDMACM_TEST_ADDR must name the device\'s IPv4 address}
REPS=${BENCH_REPS:-3}
LAT_N=${BENCH_LAT_ITERS:-5000}
LAT_EV_N=${BENCH_LAT_EVENTS_ITERS:-3000}
LAT_SPINNING_N=${BENCH_LAT_SPINNING_ITERS:-40000}
FLOOR_S=${BENCH_FLOOR_SECONDS:-10}
LAT_SPIN_US=${BENCH_LAT_SPIN_US:-200}
BW64_N=${BENCH_BW64_ITERS:-40000}
BW64K_N=${BENCH_BW64K_ITERS:-4000}
CONNS=${BENCH_CONNS:-100}
CONN_REPS=${BENCH_CONN_REPS:-$REPS}
CONN_ROUNDS=${BENCH_CONN_ROUNDS:-5}
export BENCH_CONN_ROUNDS=$CONN_ROUNDS # the binding's clients measure as many rounds (bench/conn-rounds.ts)
APP=${BENCH_APP:-.} # the build to run: bench/run.sh passes a snapshot of bin/ and dist/
# Both tools send the same way. perftest picks its inline size by device, 0 on
# rxe; the binding's default of 236 cost it about 0.7 µs at p50 2 B there (three
# pairs in one guest session, 2026-11-24).
INLINE=${BENCH_INLINE:-0}
ONLY=${BENCH_ONLY:-}
SOCK_CONNS=${BENCH_SOCK_CONNS:-30}
SOCK_CONNS_WARMUP=${BENCH_SOCK_CONNS_WARMUP:-400}
SOCK_HEAP_MIB=${BENCH_SOCK_HEAP_MIB:-1024}
SOCK_CPU_I=${BENCH_SOCK_CPU_ITERS:-4}
port=7600

# say, listening and pair: bench/pairs.sh (bench/run.sh uses them too).
source bench/pairs.sh
# The socket runs, their knobs and tss: bench/socket-runs.sh (bench/link.sh uses them too).
source bench/socket-runs.sh

ts() { echo node "$APP/bin/rdmacm" bench -I "$INLINE" "$@"; }
# The same with bound calls, which are opt-in (src/ffi/bound-call.ts): their row says what they gain end to end.
ts_bound() { echo env RDMACM_BOUND_CALLS=1 node "$APP/bin/rdmacm" bench -I "$INLINE" "$@"; }
# The same in node --single-threaded: V8 runs no helper threads on the pinned CPU (performance-notes.md, "The busy-poll tail").
ts_single() { echo node --single-threaded "$APP/bin/rdmacm" bench -I "$INLINE" "$@"; }
# The same on the newest Node line (BENCH_NEXT_NODE_BIN, set by bench/run.sh), copied out of the 9p share first.
NEXT_NODE=
if [ -x "${BENCH_NEXT_NODE_BIN:-}" ]; then
  mkdir -p /tmp/bench-next-node && cp "$BENCH_NEXT_NODE_BIN" /tmp/bench-next-node/node && NEXT_NODE=/tmp/bench-next-node/node
  NEXT_NODE_VERSION=$("$NEXT_NODE" --version)
  echo "$NEXT_NODE_VERSION" > "$RAW/next-node-version.txt"
fi
echo "$LAT_SPIN_US" > "$RAW/lat-spin-us.txt" # for the report's row names
ts_next() { echo "$NEXT_NODE" "$APP/bin/rdmacm" bench -I "$INLINE" "$@"; }
tss_next() { echo "$NEXT_NODE" "$APP/bin/rdmacm" bench stream "$@"; }

# The ping-pong and streaming pairs busy-poll on both sides: each side gets a
# CPU of its own, the TS and the C pair alike. Unpinned in the 2-CPU guest on
# 2026-11-23, ib_send_lat's p50 at 2 B read 8.8–13.2 µs and the binding's
# 10.4–14.6, depending on where the scheduler put the two sides; pinned,
# 9.0–9.3 and 10.2–11.0. The pairs that sleep stay unpinned: Node's helper
# threads then share the sleeping side's CPU (pinned, the binding's p99 on
# completion events went from 1.3–1.8 ms to 4.1–5.0 ms, ib_send_lat -e's stayed
# put), and in connection setup cmtime and the binding both run helper
# threads. BENCH_PIN=0 turns pinning off.
PIN=${BENCH_PIN:-1}

[ "$ONLY" = sockets ] && REPS=0 CONN_REPS=0
for r in $(seq 1 "$REPS"); do
  for size in 2 4096; do
    say "lat ${size} B, run $r: rdmacm bench, then ib_send_lat"
    port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-lat-$size-r$r.json" $(ts lat -s $size -n $LAT_N -p $port --json) -- $(ts lat -s $size -n $LAT_N -p $port --json "$ADDR")
    port=$((port + 1)); PINNED=$PIN pair "$RAW/c-lat-$size-r$r.txt" ib_send_lat -R -I $INLINE -s $size -n $LAT_N -p $port -- ib_send_lat -R -I $INLINE -s $size -n $LAT_N -p $port "$ADDR"
  done
  say "lat 2 B with bound calls, run $r: rdmacm bench with RDMACM_BOUND_CALLS=1"
  port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-lat-bound-2-r$r.json" $(ts_bound lat -s 2 -n $LAT_N -p $port --json) -- $(ts_bound lat -s 2 -n $LAT_N -p $port --json "$ADDR")
  say "lat 2 B in node --single-threaded, run $r"
  port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-lat-single-2-r$r.json" $(ts_single lat -s 2 -n $LAT_N -p $port --json) -- $(ts_single lat -s 2 -n $LAT_N -p $port --json "$ADDR")
  # The event-loop modes (unpinned: they sleep or yield): first the ping-pong
  # alone, as its C reference runs, for the latency targets; then each client
  # with a 1 ms timer beside it whose lateness says what the mode leaves to
  # the loop. The timer's wake-ups lengthen the ping-pong (events p50 by a
  # quarter to a third in one guest: performance-notes.md, "The 1 ms timer
  # lengthens the ping-pong beside it").
  for wait in events adaptive busy-poll; do
    n=$LAT_EV_N; [ $wait != events ] && n=$LAT_SPINNING_N
    say "lat 2 B on the event loop ($wait), run $r: rdmacm bench --wait $wait alone, then with --timer, then both in node --single-threaded"
    port=$((port + 1)); pair "$RAW/ts-lat-alone-$wait-2-r$r.json" $(ts lat --wait $wait -s 2 -n $n -p $port --json) -- $(ts lat --wait $wait -s 2 -n $n -p $port --json "$ADDR")
    port=$((port + 1)); pair "$RAW/ts-lat-$wait-2-r$r.json" $(ts lat --wait $wait -s 2 -n $n -p $port --json) -- $(ts lat --wait $wait --timer -s 2 -n $n -p $port --json "$ADDR")
    # The timer again with V8's helper threads off: on two CPUs they take turns with the loops (performance-notes.md).
    port=$((port + 1)); pair "$RAW/ts-lat-single-$wait-2-r$r.json" $(ts_single lat --wait $wait -s 2 -n $n -p $port --json) -- $(ts_single lat --wait $wait --timer -s 2 -n $n -p $port --json "$ADDR")
  done
  # Adaptive again with a fixed budget longer than a round trip here: the default floor (50 µs) is a NIC's, and
  # under TCG a round trip takes longer; the default learns a longer budget, this row says what a fixed one does
  # (performance-notes.md, "Adaptive mode's budget" and "Adaptive mode learns its budget"; shorter than a
  # wake-up, it keeps both sides asleep: "A fixed spin budget shorter than a wake-up").
  say "lat 2 B on the event loop (adaptive, spin $LAT_SPIN_US µs fixed), run $r"
  spin=(--spin $LAT_SPIN_US --max-spin $LAT_SPIN_US)
  # Alone, as the latency rows it stands beside.
  port=$((port + 1)); pair "$RAW/ts-lat-adaptive-spin-2-r$r.json" $(ts lat --wait adaptive "${spin[@]}" -s 2 -n $LAT_SPINNING_N -p $port --json) -- $(ts lat --wait adaptive "${spin[@]}" -s 2 -n $LAT_SPINNING_N -p $port --json "$ADDR")
  # Events and adaptive again with a completion listener (cq.setListener, as rdmacm/net takes its completions)
  # instead of next(): no promise and no completion object per receive, receives re-posted a chain at a time.
  # Alone, as next()'s latency rows.
  for wait in events adaptive; do
    n=$LAT_EV_N; [ $wait != events ] && n=$LAT_SPINNING_N
    say "lat 2 B on the event loop ($wait, listener), run $r"
    port=$((port + 1)); pair "$RAW/ts-lat-listener-$wait-2-r$r.json" $(ts lat --wait $wait --listener -s 2 -n $n -p $port --json) -- $(ts lat --wait $wait --listener -s 2 -n $n -p $port --json "$ADDR")
  done
  port=$((port + 1)); pair "$RAW/c-latev-2-r$r.txt" ib_send_lat -R -I $INLINE -e -s 2 -n $LAT_EV_N -p $port -- ib_send_lat -R -I $INLINE -e -s 2 -n $LAT_EV_N -p $port "$ADDR"
  # The events mode on the newest Node line too (bench/run.sh fetches it): Node 20's wake-up path is the slowest.
  if [ -n "$NEXT_NODE" ]; then
    say "lat 2 B on the event loop (events) on Node $NEXT_NODE_VERSION, run $r"
    port=$((port + 1)); pair "$RAW/ts-lat-alone-events-next-2-r$r.json" $(ts_next lat --wait events -s 2 -n $LAT_EV_N -p $port --json) -- $(ts_next lat --wait events -s 2 -n $LAT_EV_N -p $port --json "$ADDR")
    port=$((port + 1)); pair "$RAW/ts-lat-events-next-2-r$r.json" $(ts_next lat --wait events -s 2 -n $LAT_EV_N -p $port --json) -- $(ts_next lat --wait events --timer -s 2 -n $LAT_EV_N -p $port --json "$ADDR")
  fi
  # The same ping-pong in C, waiting on libuv as a Node process does (built by bench/run.sh).
  if [ -x "$APP/uv-pingpong" ]; then
    # Events alone first, as the latency targets run: how near an event loop in C comes to ib_send_lat -e.
    say "lat 2 B in C on libuv (bench/uv-pingpong.c): events alone, then events and busy-poll with the timer, run $r"
    port=$((port + 1)); pair "$RAW/c-uvlat-alone-2-r$r.json" "$APP/uv-pingpong" -s -w 1000 -n $LAT_EV_N -p $port -- "$APP/uv-pingpong" -w 1000 -n $LAT_EV_N -p $port "$ADDR"
    # Again in the safe API's order (drain, then re-arm), as bench/events-raw.ts runs below: Node's share at equal steps.
    port=$((port + 1)); pair "$RAW/c-uvlat-drain-alone-2-r$r.json" "$APP/uv-pingpong" -D -s -w 1000 -n $LAT_EV_N -p $port -- "$APP/uv-pingpong" -D -w 1000 -n $LAT_EV_N -p $port "$ADDR"
    # Each with a 1 ms timer beside it, as the TS clients run one: what a C program on the same loop leaves to timers.
    port=$((port + 1)); pair "$RAW/c-uvlat-2-r$r.json" "$APP/uv-pingpong" -s -w 1000 -n $LAT_EV_N -p $port -- "$APP/uv-pingpong" -T -w 1000 -n $LAT_EV_N -p $port "$ADDR"
    port=$((port + 1)); pair "$RAW/c-uvbusy-2-r$r.json" "$APP/uv-pingpong" -s -m busy -w 1000 -n $LAT_SPINNING_N -p $port -- "$APP/uv-pingpong" -m busy -T -w 1000 -n $LAT_SPINNING_N -p $port "$ADDR"
  else
    say "no $APP/uv-pingpong (bench/build-uv-pingpong.sh did not build it): the C-on-libuv rows stay empty"
  fi
  # The same ping-pong in Node over the raw layer alone (bench/events-raw.ts), alone as the events rows run, in
  # the safe API's order (drain, then arm): the least JavaScript a wake-up runs, so the floor under the safe API.
  say "lat 2 B on completion events through the raw layer alone (bench/events-raw.ts), run $r"
  port=$((port + 1)); pair "$RAW/ts-lat-raw-events-2-r$r.json" node "$APP/dist/bench/events-raw.js" -s -w 10000 -n $LAT_EV_N -p $port -- node "$APP/dist/bench/events-raw.js" -w 10000 -n $LAT_EV_N -p $port "$ADDR"
  # The guest's own floor for the timer rows of the modes that spin: two loops that only spin, no RDMA, both
  # CPUs busy as a busy pair keeps them. In C, how often each lost its CPU; in Node (spinning in 1 ms slices,
  # as busy-poll does), the same 1 ms timer's lateness (performance-notes.md, "The 1 ms timer in the modes that spin").
  say "the guest's floor: two loops that only spin, in C (bench/spin-gaps.c), then in Node (bench/spin-floor.ts), run $r"
  if [ -x "$APP/spin-gaps" ]; then
    "$APP/spin-gaps" $FLOOR_S > "$RAW/c-spin-gaps-r$r.json.other" & "$APP/spin-gaps" $FLOOR_S > "$RAW/c-spin-gaps-r$r.json"; wait
  fi
  node "$APP/dist/bench/spin-floor.js" $FLOOR_S > /dev/null & node "$APP/dist/bench/spin-floor.js" $FLOOR_S --timer > "$RAW/ts-spin-floor-r$r.json"; wait
  for size in 64 65536; do
    n=$BW64_N; [ $size = 65536 ] && n=$BW64K_N
    say "bw ${size} B, run $r: rdmacm bench, then ib_send_bw"
    port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-bw-$size-r$r.json" $(ts bw -s $size -n $n -p $port --json) -- $(ts bw -s $size -n $n -p $port --json "$ADDR")
    port=$((port + 1)); PINNED=$PIN pair "$RAW/c-bw-$size-r$r.txt" ib_send_bw -R -I $INLINE -r 2048 -s $size -n $n -p $port -- ib_send_bw -R -I $INLINE -r 2048 -s $size -n $n -p $port "$ADDR"
    say "bw ${size} B on the event loop (adaptive), run $r: rdmacm bench --wait adaptive"
    # Pinned as the busy ib_send_bw it is held against: a stream's waits spin on a learned budget and seldom
    # sleep, and unpinned both tools lost a fifth or more (performance-notes.md, "The adaptive stream, pinned").
    port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-bw-adaptive-$size-r$r.json" $(ts bw --wait adaptive -s $size -n $n -p $port --json) -- $(ts bw --wait adaptive -s $size -n $n -p $port --json "$ADDR")
    if [ $size = 64 ]; then
      # What the opt-in bound calls buy a stream whose every message is a post (a row without a target).
      say "bw 64 B on the event loop (adaptive) with bound calls, run $r: RDMACM_BOUND_CALLS=1"
      port=$((port + 1)); PINNED=$PIN pair "$RAW/ts-bw-adaptive-bound-64-r$r.json" $(ts_bound bw --wait adaptive -s 64 -n $n -p $port --json) -- $(ts_bound bw --wait adaptive -s 64 -n $n -p $port --json "$ADDR")
    fi
  done
done

if [ "$ONLY" != sockets ]; then
  say "ib_write_bw 65536 B (reference)"
  port=$((port + 1)); PINNED=$PIN pair "$RAW/c-wbw-65536-r1.txt" ib_write_bw -R -s 65536 -n $BW64K_N -p $port -- ib_write_bw -R -s 65536 -n $BW64K_N -p $port "$ADDR"
fi

for r in $(seq 1 "$CONN_REPS"); do
  say "connection setup, $CONNS connections, run $r: cmtime, the binding, then its raw layer alone (all against cmtime's server)"
  # cmtime's client measures one round per process: CONN_ROUNDS of them against one server, as the binding's clients measure CONN_ROUNDS rounds.
  port=$((port + 1)); SERVER_LINGER=2 pair "$RAW/c-cmtime-r$r.txt" cmtime -b "$ADDR" -p $port -c "$CONNS" -- \
    bash -c 'for _ in $(seq "$1"); do cmtime -s "$2" -p "$3" -c "$4" || exit; done' cmtime-rounds "$CONN_ROUNDS" "$ADDR" $port "$CONNS"
  port=$((port + 1)); SERVER_LINGER=2 pair "$RAW/ts-conn-r$r.json" cmtime -b "$ADDR" -p $port -c "$CONNS" -- node "$APP/dist/bench/connsetup.js" "$ADDR" $port "$CONNS"
  port=$((port + 1)); SERVER_LINGER=2 pair "$RAW/raw-conn-r$r.json" cmtime -b "$ADDR" -p $port -c "$CONNS" -- node "$APP/dist/bench/connsetup-raw.js" "$ADDR" $port "$CONNS"
done

if [ "$ONLY" != sockets ]; then
  say "JS heap across 1e5 post/poll cycles"
  port=$((port + 1))
  timeout 600 node --expose-gc "$APP/dist/bench/heap.js" "$ADDR" $port 100000 > "$RAW/heap.json" 2> "$RAW/heap.json.err" || say "FAILED: heap check (see $RAW/heap.json.err)"
  say "the event path, hop by hop (crossings, the loop's hops, an in-process ping-pong on events)"
  port=$((port + 1))
  timeout 600 node "$APP/dist/bench/event-path.js" "$ADDR" $port > "$RAW/event-path.json" 2> "$RAW/event-path.json.err" || say "FAILED: event path (see $RAW/event-path.json.err)"
fi

# Sockets: rstream's custom runs (-S SIZE -C COUNT -I ITERS), rdmacm/net's
# `rdmacm bench stream` against rstream -T b (blocking calls, as a Node socket
# waits) and against the same command over node:net TCP to the same address
# (in one guest the kernel carries that TCP over loopback). Every pair sleeps
# on events: none is pinned. The TS pairs run their warm-up iterations first
# (-w); rstream has no warm-up and gets the same measured iterations. The
# ping-pongs also run rstream over TCP (-T s): C's floor beside node:net's.
# CPU time: `rdmacm bench stream` reports its own over the timed interval;
# rstream's comes from bench/cpu-time.sh around each process, run twice (-I 1
# and -I $SOCK_CPU_I) so that the difference is the extra bytes' alone.
# rstream_pair OUT RSTREAM_ARGS...: an rstream server and client on the next port, each timed into OUT.cpu-server and OUT.cpu-client.
rstream_pair() {
  local out=$1; shift
  port=$((port + 1)); pair "$out" bash bench/cpu-time.sh "$out.cpu-server" rstream -b "$ADDR" -p $port "$@" -- bash bench/cpu-time.sh "$out.cpu-client" rstream -s "$ADDR" -p $port "$@"
}
for r in $(seq 1 "$SOCK_REPS"); do
  for spec in "${SOCK_SPECS[@]}"; do
    set -- $spec
    kind=$1 size=$2 n=$3
    socket_run "$kind" "$size" "$n"
    say "sockets: $kind $size B, run $r: rdmacm/net, rstream -T b$([ "$kind" = bw ] && echo ', rdmacm/net with onread'), node:net TCP$([ "$kind" = lat ] && echo ', rstream -T s')"
    port=$((port + 1)); pair "$RAW/sock-ts-$kind-$size-r$r.json" $(tss -l "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json) -- $(tss "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json)
    rstream_pair "$RAW/sock-c-$kind-$size-r$r.txt" "${run[@]}" -T b
    if [ "$kind" = bw ]; then
      rstream_pair "$RAW/sock-clong-$kind-$size-r$r.txt" -S "$size" -C "$n" -I "$SOCK_CPU_I" -T b
      # Reading as rstream reads, into one buffer reused: node:net's onread, both sides.
      port=$((port + 1)); pair "$RAW/sock-tsonread-$kind-$size-r$r.json" $(tss -l "$ADDR" -p $port "${run[@]}" "${warm[@]}" --onread --json) -- $(tss "$ADDR" -p $port "${run[@]}" "${warm[@]}" --onread --json)
    fi
    port=$((port + 1)); LISTEN=tcp pair "$RAW/sock-tcp-$kind-$size-r$r.json" $(tss --tcp -l "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json) -- $(tss --tcp "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json)
    if [ "$kind" = lat ] && [ "$size" = 64 ] && [ -n "$NEXT_NODE" ]; then
      # The same rdmacm/net pair on the newest Node line: a sleeping socket's wake-up is mostly Node's own (performance-notes.md).
      port=$((port + 1)); pair "$RAW/sock-tsnext-$kind-$size-r$r.json" $(tss_next -l "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json) -- $(tss_next "$ADDR" -p $port "${run[@]}" "${warm[@]}" --json)
    fi
    if [ "$kind" = lat ]; then
      # rstream's own TCP (-T s), blocking as above: C over the same TCP, so node:net's row beside it shows what this guest charges any Node socket.
      port=$((port + 1)); LISTEN=tcp pair "$RAW/sock-ctcp-$kind-$size-r$r.txt" rstream -T s -b "$ADDR" -p $port "${run[@]}" -T b -- rstream -T s -s "$ADDR" -p $port "${run[@]}" -T b
    fi
  done
  say "sockets: ib_send_bw -e 65536 B, run $r (the verbs on completion events, as a socket waits)"
  port=$((port + 1)); pair "$RAW/c-bwev-65536-r$r.txt" ib_send_bw -R -e -I $INLINE -r 2048 -s 65536 -n $BW64K_N -p $port -- ib_send_bw -R -e -I $INLINE -r 2048 -s 65536 -n $BW64K_N -p $port "$ADDR"
done
say "sockets: connections per second, rdmacm/net, node:net TCP, then rsockets in C ($SOCK_CONNS after $SOCK_CONNS_WARMUP, in one process)"
port=$((port + 1))
timeout 600 node "$APP/dist/bench/socket-conns.js" rdma "$ADDR" $port "$SOCK_CONNS" "$SOCK_CONNS_WARMUP" > "$RAW/sock-conns-rdma.json" 2> "$RAW/sock-conns-rdma.json.err" || say "FAILED: rdma connections (see $RAW/sock-conns-rdma.json.err)"
timeout 600 node "$APP/dist/bench/socket-conns.js" tcp "$ADDR" $port "$SOCK_CONNS" "$SOCK_CONNS_WARMUP" > "$RAW/sock-conns-tcp.json" 2> "$RAW/sock-conns-tcp.json.err" || say "FAILED: tcp connections (see $RAW/sock-conns-tcp.json.err)"
if [ -x "$APP/rsocket-conns" ]; then
  port=$((port + 1))
  timeout 600 "$APP/rsocket-conns" "$ADDR" $port "$SOCK_CONNS" "$SOCK_CONNS_WARMUP" > "$RAW/sock-conns-rsocket.json" 2> "$RAW/sock-conns-rsocket.json.err" || say "FAILED: rsocket connections (see $RAW/sock-conns-rsocket.json.err)"
else
  say "no $APP/rsocket-conns (bench/build-rsocket-conns.sh did not build it): the rsockets column stays empty"
fi
say "sockets: JS heap while streaming $SOCK_HEAP_MIB MiB"
port=$((port + 1))
timeout 600 node --expose-gc "$APP/dist/bench/socket-heap.js" "$ADDR" $port "$SOCK_HEAP_MIB" > "$RAW/sock-heap.json" 2> "$RAW/sock-heap.json.err" || say "FAILED: socket heap check (see $RAW/sock-heap.json.err)"
say "done"
exit
}
