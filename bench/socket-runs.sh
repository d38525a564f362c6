# The socket rows' runs, for bench/guest.sh (one guest) and bench/link.sh (two
# guests), sourced: rstream's custom runs (-S SIZE -C COUNT -I ITERS), the
# knobs' defaults (bench/guest.sh's header lists them) and `tss`, which spells
# `rdmacm bench stream` of the build under test ($APP).
# Three repetitions (medians): across the link a single rstream run stalls now and then (16 MiB at 1 MiB writes took
# 3.05 and 3.13 s in two of them), and one such run alone reads as a target met.
SOCK_REPS=${BENCH_SOCK_REPS:-3}
SOCK_LAT_N=${BENCH_SOCK_LAT_ITERS:-1000}
# 5000 warm-up round trips: V8 compiles the socket path's functions for thousands of them (until
# ~3500 on Node 20), and each compile stalls a round trip (performance-notes.md).
SOCK_LAT_W=${BENCH_SOCK_LAT_WARMUP:-5000}
# 64 MiB each way: runs of 8 MiB (a third of a second in one guest) swung by a
# third from one to the next, rstream's as much as ours (performance-notes.md).
# bench/link.sh keeps 8 MiB, whose runs last seconds across the link.
SOCK_BW64K_C=${BENCH_SOCK_BW64K_COUNT:-1024}
SOCK_BW1M_C=${BENCH_SOCK_BW1M_COUNT:-64}
# The throughput pairs' warm-up, in MiB each way: until 2026-12-02 one iteration
# (64 MiB, 1024 writes of 64 KiB), after which V8 still compiled the path through
# the measured run, which then read two thirds of a warmed one (performance-notes.md).
SOCK_BW_WARM_MIB=${BENCH_SOCK_BW_WARMUP_MIB:-512}
# Each "KIND SIZE COUNT": throughput at 64 KiB and 1 MiB writes, ping-pong at 64 B and 4 KiB.
SOCK_SPECS=("bw 65536 $SOCK_BW64K_C" "bw 1048576 $SOCK_BW1M_C" "lat 64 $SOCK_LAT_N" "lat 4096 $SOCK_LAT_N")
# socket_run KIND SIZE COUNT: sets run (rstream's -S -C -I, the same for both tools) and warm (the TS pairs'
# warm-up, -w: iterations of the run, as many as SOCK_BW_WARM_MIB takes, or round trips).
socket_run() {
  if [ "$1" = bw ]; then
    local per_iteration=$(($2 * $3))
    run=(-S "$2" -C "$3" -I 1) warm=(-w $(((SOCK_BW_WARM_MIB * 1048576 + per_iteration - 1) / per_iteration)))
  else
    run=(-S "$2" -C 1 -I "$3") warm=(-w "$SOCK_LAT_W")
  fi
}
tss() { echo node "$APP/bin/rdmacm" bench stream "$@"; }
