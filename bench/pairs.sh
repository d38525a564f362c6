# Running a server and its client, for bench/guest.sh and bench/run.sh (sourced).
say() { printf 'bench: %s\n' "$*" >&2; }

# listening PORT: waits (up to 30 s) until an rdma_cm id listens on PORT, as
# `rdma res show cm_id` lists it; without the rdma tool, sleeps
# BENCH_SERVER_DELAY (default 1.5 s). A perftest client started before its
# server listens is rejected ("RDMA_CM_EVENT_REJECTED; error: 8").
# With LISTEN=tcp, waits for a TCP listener on PORT instead (`ss -ltn`).
listening() {
  if [ "${LISTEN:-rdma}" = tcp ]; then
    local t=0
    until ss -Hltn "sport = :$1" 2> /dev/null | grep -q .; do t=$((t + 1)); [ $t -ge 300 ] && return; sleep 0.1; done
    return
  fi
  if ! command -v rdma > /dev/null; then sleep "${BENCH_SERVER_DELAY:-1.5}"; return; fi
  local tries=0
  until rdma res show cm_id 2> /dev/null | grep -q "state LISTEN .*src-addr [^ ]*:$1 "; do
    tries=$((tries + 1))
    if [ $tries -ge 300 ]; then say "nothing listens on port $1 after 30 s; starting the client anyway"; return; fi
    sleep 0.1
  done
}

# pair OUT SERVER_CMD... -- CLIENT_CMD...: runs the server in the background,
# waits for it to listen (on the port after its -p), then the client; the client's stdout goes to OUT. A
# client that fails gets one more try, reported, against a fresh server (a
# perftest server whose client died mid-run waits for it forever).
# A server that has not ended SERVER_LINGER seconds (default 60) after its client is stopped (cmtime's never ends).
# With PINNED=1 (and two CPUs or more), the server runs on CPU 0 and the client on CPU 1.
pair() {
  local out=$1; shift
  local server=() client=()
  if [ "${PINNED:-0}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
    server=(taskset -c 0)
    client=(taskset -c 1)
  fi
  while [ "$1" != -- ]; do server+=("$1"); shift; done
  shift
  client+=("$@")
  local port_arg= i
  for ((i = 0; i < ${#server[@]} - 1; i++)); do [ "${server[i]}" = -p ] && port_arg=${server[i + 1]}; done
  "${server[@]}" > "$out.server" 2>&1 &
  local spid=$!
  listening "$port_arg"
  if ! timeout 600 "${client[@]}" > "$out" 2> "$out.err"; then
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
    mv "$out.err" "$out.err.first-try"
    "${server[@]}" > "$out.server" 2>&1 &
    spid=$!
    listening "$port_arg"
    if timeout 600 "${client[@]}" > "$out" 2> "$out.err"; then
      say "retried: ${client[*]}"
    else
      say "FAILED: ${client[*]} (see $out.err)"
    fi
  fi
  if ! timeout "${SERVER_LINGER:-60}" tail --pid=$spid -f /dev/null; then kill $spid 2>/dev/null; fi
  wait $spid 2>/dev/null
}

# link_pair NAME SERVER_CMD... -- CLIENT_CMD...: across the two guests of
# `scripts/rxe-vm.sh --hosts 2` (HOST: this guest's RDMACM_HOST_INDEX, SHARED:
# RDMACM_SHARED_DIR, RAW: the output folder). Host 0 starts the server and
# says so in the shared folder once it listens; host 1 waits for that, runs
# the client into RAW/NAME and says it is done; host 0 waits (bounded) for
# its server to end, output in RAW/NAME.server. Both wait at most 10 minutes.
link_pair() {
  local name=$1; shift
  local server=() port=
  while [ "$1" != -- ]; do server+=("$1"); shift; done
  shift
  local i
  for ((i = 0; i < ${#server[@]} - 1; i++)); do [ "${server[i]}" = -p ] && port=${server[i + 1]}; done
  if [ "$HOST" = 0 ]; then
    "${server[@]}" > "$RAW/$name.server" 2>&1 &
    local spid=$!
    listening "$port"
    touch "$SHARED/$name-listening"
    local t=0
    until [ -e "$SHARED/$name-done" ]; do t=$((t + 1)); [ $t -ge 6000 ] && break; sleep 0.1; done
    if ! timeout "${SERVER_LINGER:-60}" tail --pid=$spid -f /dev/null; then kill $spid 2> /dev/null; say "link: the server of $name did not end"; fi
    wait $spid 2> /dev/null
  else
    local t=0
    until [ -e "$SHARED/$name-listening" ]; do t=$((t + 1)); [ $t -ge 6000 ] && { say "link: no server for $name"; touch "$SHARED/$name-done"; return; }; sleep 0.1; done
    timeout 600 "$@" > "$RAW/$name" 2> "$RAW/$name.err" || say "FAILED across the link: $* (see $RAW/$name.err)"
    touch "$SHARED/$name-done"
  fi
}

# experiment_dir NAME: for the experiment scripts (bench/wake-charge.sh,
# bench/syscall-times.sh): builds the package and bench/uv-pingpong.c into a new
# bench/results/NAME-STAMP/, and prints that folder.
experiment_dir() {
  npm run --silent build >&2 || return 1
  local raw
  raw=bench/results/$1-$(date -u +%Y%m%dT%H%M%SZ)
  mkdir -p "$raw" && bash bench/build-uv-pingpong.sh "$raw/uv-pingpong" >&2 && echo "$raw"
}
