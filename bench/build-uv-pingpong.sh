#!/usr/bin/env bash
# Builds bench/uv-pingpong.c (the C ping-pong on libuv that `npm run bench`
# sets beside `rdmacm bench lat --wait events`) into OUT. Needs a C compiler and
# the headers of libuv, librdmacm and libibverbs (scripts/install-deps.sh test).
#
#   bash bench/build-uv-pingpong.sh OUT
set -euo pipefail
out=${1:?usage: build-uv-pingpong.sh OUT}
exec "${CC:-cc}" -O2 -Wall -Wextra -Werror -o "$out" "$(dirname "$0")/uv-pingpong.c" -luv -lrdmacm -libverbs
