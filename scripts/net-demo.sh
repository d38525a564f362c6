#!/usr/bin/env bash
# net-demo.sh - rdmacm/net as a user gets it: packs this checkout (npm pack),
# installs the tarball into an empty folder (npm install, from the npm cache
# where it can), and runs examples/net-echo.mjs and examples/net-http.mjs
# there between two soft-RoCE guests (scripts/rxe-vm.sh --hosts 2): host0
# serves, host1 is the client.
#
#   scripts/net-demo.sh [--keep]     --keep leaves the folder for a look
#
# The folder is .scratch/net-demo.XXXXXX in this checkout: the guests share it
# writable (the guest's /tmp is its own). Exit status: rxe-vm.sh's.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd -P)
keep=0
[ "${1:-}" = --keep ] && keep=1
mkdir -p .scratch
demo=$(mktemp -d "$root/.scratch/net-demo.XXXXXX")
if [ "$keep" = 0 ]; then trap 'rm -rf "$demo"' EXIT; fi

echo "== npm pack (builds first)"
tarball=$(npm pack --silent --pack-destination "$demo" | tail -n 1)
echo "== npm install $tarball into the empty folder $demo"
(
  cd "$demo"
  npm init -y >/dev/null
  npm install --prefer-offline --no-audit --no-fund "./$tarball"
)
cp examples/net-echo.mjs examples/net-http.mjs "$demo/"

# What each guest runs, in the folder: host0 serves, host1 waits for the
# server's "listening" line (a file in the shared folder) before it connects.
cat >"$demo/two-hosts.sh" <<'EOF'
set -euo pipefail
read -r server _ <<<"$RDMACM_TEST_ADDRS"
ready() { touch "$RDMACM_SHARED_DIR/$1"; }
await() {
  for _ in $(seq 1 600); do [ -e "$RDMACM_SHARED_DIR/$1" ] && return 0; sleep 0.1; done
  echo "no $1 after 60 s" >&2; return 1
}
# Runs a server, tells the other host once it printed its first line, passes the rest through.
serve() {
  local name=$1; shift
  node "$@" | { IFS= read -r line; echo "$line"; ready "$name"; cat; }
}
if [ "$RDMACM_HOST_INDEX" = 0 ]; then
  serve echo net-echo.mjs serve "$server" 7471
  serve http net-http.mjs serve "$server" 8080
else
  await echo
  node net-echo.mjs send "$server" 7471 'hello over RDMA'
  await http
  node net-http.mjs get "$server" 8080
fi
EOF

echo "== two guests"
bash scripts/rxe-vm.sh --hosts 2 --project "$demo" --timeout "${RDMACM_VM_TIMEOUT:-600}" -- bash two-hosts.sh
