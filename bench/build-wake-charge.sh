#!/usr/bin/env bash
# Builds bench/wake-charge.c (the LD_PRELOAD shim of bench/wake-charge.sh) into
# OUT. Needs a C compiler and the verbs headers (scripts/install-deps.sh test).
#
#   bash bench/build-wake-charge.sh OUT
set -euo pipefail
out=${1:?usage: build-wake-charge.sh OUT}
exec "${CC:-cc}" -O2 -Wall -Wextra -Werror -shared -fPIC -o "$out" "$(dirname "$0")/wake-charge.c" -ldl
