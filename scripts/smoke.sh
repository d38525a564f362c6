#!/usr/bin/env bash
# The main job (npm run smoke): the smoke test on this host's RDMA device, or,
# where the host has none, inside a soft-RoCE VM (scripts/rxe-vm.sh).
# Arguments go to `rdmacm smoke` (see bin/rdmacm smoke --help).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh runtime
[ -d node_modules/koffi ] && [ -d node_modules/esbuild ] || npm ci --no-audit --no-fund
npm run --silent build

if [ -n "${RDMACM_TEST_DEVICE:-}" ] || { [ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; }; then
  exec node bin/rdmacm smoke "$@"
fi
echo "smoke: no RDMA device on this host; running in a soft-RoCE VM (scripts/rxe-vm.sh)" >&2
exec bash scripts/rxe-vm.sh --timeout "${RDMACM_VM_TIMEOUT:-600}" -- node bin/rdmacm smoke "$@"
