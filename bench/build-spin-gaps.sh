#!/usr/bin/env bash
# Builds bench/spin-gaps.c (a C loop that only spins, counting the times it
# lost its CPU: the guest's own floor beside the 1 ms timer rows) into OUT.
# Needs a C compiler.
#
#   bash bench/build-spin-gaps.sh OUT
set -euo pipefail
out=${1:?usage: build-spin-gaps.sh OUT}
exec "${CC:-cc}" -O2 -Wall -Wextra -Werror -o "$out" "$(dirname "$0")/spin-gaps.c"
