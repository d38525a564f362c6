#!/usr/bin/env bash
# The socket rows across a link: run by bench/run.sh on both guests of
# `scripts/rxe-vm.sh --hosts 2` (host 0 serves, host 1 is the client), so
# RoCE v2 and TCP both cross the virtual wire between them. The same runs as
# bench/guest.sh's socket rows: rdmacm/net against rstream -T b and node:net
# TCP, rstream's custom runs, and ib_send_bw -e at 64 KiB; their output files
# are guest.sh's names with a `link-` prefix, in the run's raw folder (RAW).
# Knobs: BENCH_SOCK_REPS (3) and the BENCH_SOCK_* sizes (bench/socket-runs.sh),
# BENCH_INLINE (0) for ib_send_bw, BENCH_APP (the build to run).
set -uo pipefail
RAW=${1:?usage: bench/link.sh RAW_DIR}
APP=${BENCH_APP:-.}
INLINE=${BENCH_INLINE:-0}
BW64K_N=${BENCH_BW64K_ITERS:-1000}
HOST=${RDMACM_HOST_INDEX:?run through scripts/rxe-vm.sh --hosts 2}
SHARED=${RDMACM_SHARED_DIR:?run through scripts/rxe-vm.sh --hosts 2}
read -r SERVER_ADDR _ <<< "${RDMACM_TEST_ADDRS:?}"
mkdir -p "$RAW"

# say, listening and link_pair: bench/pairs.sh; the runs, their knobs and tss: bench/socket-runs.sh.
source bench/pairs.sh
# 8 MiB each way: across the link such a run already lasts about a second (its slow ones, five).
BENCH_SOCK_BW64K_COUNT=${BENCH_SOCK_BW64K_COUNT:-128}
BENCH_SOCK_BW1M_COUNT=${BENCH_SOCK_BW1M_COUNT:-8}
source bench/socket-runs.sh

port=7900
for r in $(seq 1 "$SOCK_REPS"); do
  for spec in "${SOCK_SPECS[@]}"; do
    set -- $spec
    kind=$1 size=$2 n=$3
    socket_run "$kind" "$size" "$n"
    [ "$HOST" = 1 ] && say "link: $kind $size B, run $r: rdmacm/net, rstream -T b, node:net TCP"
    port=$((port + 1)); link_pair "link-sock-ts-$kind-$size-r$r.json" $(tss -l "$SERVER_ADDR" -p $port "${run[@]}" "${warm[@]}" --json) -- $(tss "$SERVER_ADDR" -p $port "${run[@]}" "${warm[@]}" --json)
    port=$((port + 1)); link_pair "link-sock-c-$kind-$size-r$r.txt" rstream -b "$SERVER_ADDR" -p $port "${run[@]}" -T b -- rstream -s "$SERVER_ADDR" -p $port "${run[@]}" -T b
    port=$((port + 1)); LISTEN=tcp link_pair "link-sock-tcp-$kind-$size-r$r.json" $(tss --tcp -l "$SERVER_ADDR" -p $port "${run[@]}" "${warm[@]}" --json) -- $(tss --tcp "$SERVER_ADDR" -p $port "${run[@]}" "${warm[@]}" --json)
  done
  [ "$HOST" = 1 ] && say "link: ib_send_bw -e 65536 B, run $r"
  port=$((port + 1)); link_pair "link-c-bwev-65536-r$r.txt" ib_send_bw -R -e -I "$INLINE" -r 2048 -s 65536 -n "$BW64K_N" -p $port -- ib_send_bw -R -e -I "$INLINE" -r 2048 -s 65536 -n "$BW64K_N" -p $port "$SERVER_ADDR"
done
[ "$HOST" = 1 ] && say "link: done"
exit 0
