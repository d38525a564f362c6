# The test run's count, from the runners' own output (scripts/test.sh keeps a
# copy of it; awk -f scripts/test-counts.awk LOG):
#   tests: N passed, N failed, N cancelled, N skipped
#   each failed test, after the step that ran it (the last "platform: STEP: ..."
#     line, or the guest, for the two hosts' "[hostN] " lines) and with the
#     first line of what it said: the TAP reporter's "not ok N - NAME" and its
#     "error:", the spec reporter's "✖ NAME (DURATION)" (printed twice) and the
#     line under one of them. CI shows only the tail of a run, so the names belong here.
#   each skipped test with its reason: the TAP reporter's
#     "ok N - NAME # SKIP REASON", the spec reporter's "﹣ NAME (DURATION) # REASON"
#   each VM pass that ran twice because a guest's clock jumped (scripts/test.sh's vm_pass)
#   what a file filter left out ("device tier: RDMACM_TEST_ONLY=...").

{
  where = step
  if (match($0, /^\[host[0-9]+\] /)) where = "two hosts, " substr($0, 2, RLENGTH - 3)
  sub(/^\[host[0-9]+\] /, "")
}
/^platform: [^:]+: / { step = $0; sub(/^platform: /, "", step); sub(/: .*$/, "", step) }

# What a failure said: the spec reporter's indented line under it (Node 20 prints it with the failure,
# Node 22 and later only in the list of failures at the end), the TAP reporter's "error:" in its block
# (or the line under that).
awaiting[where] == "line" {
  if ($0 ~ /^ +[^ ]/ && $0 !~ /^ *(✔|✖|﹣|ℹ) /) cause[latest[where]] = $0
  awaiting[where] = ""
}
awaiting[where] == "error" && /^ *error: / {
  text = $0; sub(/^ *error: /, "", text)
  if (text ~ /^\|-?$/) awaiting[where] = "line"
  else { cause[latest[where]] = text; awaiting[where] = "" }
}
/^ *not ok [0-9]+ - / {
  name = $0; sub(/^ *not ok [0-9]+ - /, "", name); sub(/ # (TODO|SKIP).*$/, "", name)
  failed_test(name, "error")
}
/^ *✖ / && !/^ *✖ failing tests:$/ {
  name = $0; sub(/^ *✖ /, "", name); sub(/ \([0-9.]+m?s\)$/, "", name)
  failed_test(name, "line")
}

/^(# |ℹ )pass [0-9]+$/ { passed += $NF }
/^(# |ℹ )fail [0-9]+$/ { failed += $NF }
/^(# |ℹ )cancelled [0-9]+$/ { cancelled += $NF }
/^(# |ℹ )skipped [0-9]+$/ { skipped += $NF }

/^ *ok [0-9]+ - .* # SKIP/ {
  line = $0; sub(/^ *ok [0-9]+ - /, "", line)
  at = index(line, " # SKIP"); name = substr(line, 1, at - 1); reason = substr(line, at + 7)
  sub(/^ +/, "", reason); why[++n] = name " — " (reason == "" ? "no reason given" : reason)
}
/^ *﹣ / {
  line = $0; sub(/^ *﹣ /, "", line)
  if (match(line, / \([0-9.]+m?s\)( # |$)/)) {
    name = substr(line, 1, RSTART - 1); reason = substr(line, RSTART + RLENGTH)
    if (reason == "SKIP") reason = ""
  } else { name = line; reason = "" }
  why[++n] = name " — " (reason == "" ? "no reason given" : reason)
}
/^== the same pass again: / { again[++a] = substr($0, 4) }
/^device tier: RDMACM_TEST_(ONLY|EXCEPT)=/ { dropped[++d] = $0 }

END {
  printf "tests: %d passed, %d failed, %d cancelled, %d skipped\n", passed, failed, cancelled, skipped
  for (i = 1; i <= f; i++) {
    text = cause[i]; sub(/^ +/, "", text)
    printf "  failed: %s%s\n", failures[i], text == "" ? "" : ": " substr(text, 1, 240)
  }
  for (i = 1; i <= n; i++) printf "  skipped: %s\n", why[i]
  if (n < skipped) printf "  (%d more skipped without a test line to name them)\n", skipped - n
  for (i = 1; i <= a; i++) printf "  %s\n", again[i]
  for (i = 1; i <= d; i++) printf "  %s\n", dropped[i]
}

# A failed test, once per step (the spec reporter names it again at the end), and where its cause comes from.
function failed_test(name, expect) {
  if (!((where, name) in number)) {
    number[where, name] = ++f
    failures[f] = "[" where "] " name
  }
  if (cause[number[where, name]] != "") return
  latest[where] = number[where, name]
  awaiting[where] = expect
}
