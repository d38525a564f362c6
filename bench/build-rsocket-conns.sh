#!/usr/bin/env bash
# Builds bench/rsocket-conns.c (rsockets' connections per second, the C column
# of the bench's socket connection row) into OUT. Needs a C compiler and
# librdmacm's headers (scripts/install-deps.sh test).
#
#   bash bench/build-rsocket-conns.sh OUT
set -euo pipefail
out=${1:?usage: build-rsocket-conns.sh OUT}
exec "${CC:-cc}" -O2 -Wall -Wextra -Werror -o "$out" "$(dirname "$0")/rsocket-conns.c" -lrdmacm -lpthread
