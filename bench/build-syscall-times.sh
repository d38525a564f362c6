#!/usr/bin/env bash
# Builds bench/syscall-times.c (the LD_PRELOAD shim of bench/syscall-times.sh)
# into OUT. Needs a C compiler (scripts/install-deps.sh test).
#
#   bash bench/build-syscall-times.sh OUT
set -euo pipefail
out=${1:?usage: build-syscall-times.sh OUT}
exec "${CC:-cc}" -O2 -Wall -Wextra -Werror -shared -fPIC -o "$out" "$(dirname "$0")/syscall-times.c" -ldl
