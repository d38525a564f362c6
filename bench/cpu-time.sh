#!/usr/bin/env bash
# cpu-time.sh OUT COMMAND...: runs COMMAND, then writes the CPU seconds it used,
# its children's included, to OUT as "USER SYSTEM" (bash's `times`). For a C
# tool that cannot time itself (rstream); bench/guest.sh subtracts a short
# run's figure from a long one's, so the set-up cancels out. Exits as COMMAND
# did, and passes TERM and INT on to it.
set -u
out=$1; shift
"$@" &
child=$!
trap 'kill -TERM $child 2> /dev/null' TERM INT
wait $child
rc=$?
# wait returns early when a trapped signal arrives: wait for the command's own end.
while kill -0 $child 2> /dev/null; do wait $child; rc=$?; done
# times' second line is the children's: "XmY.YYYs XmY.YYYs" (user, system).
# Not in a pipe: a pipe's subshell has no children of its own to report.
times > "$out"
awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); printf "%s%.3f", (i > 1 ? " " : ""), t[1] * 60 + t[2] } print "" }' "$out" > "$out.tmp" && mv "$out.tmp" "$out"
exit $rc
