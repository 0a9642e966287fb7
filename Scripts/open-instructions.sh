#!/usr/bin/env bash
# P7 measured exactly: the instructions (callgrind) and the system calls (strace) of opening a
# store and answering its first home list in a new process, against the raw baseline (the LMDB
# wrapper opens the environment and the `events` database and reads the last record). Figures
# that do not move with the machine's load, unlike P7's microseconds. A documented manual
# measurement; not part of .ci/run.
#
# Usage: Scripts/open-instructions.sh [N]   (default N = 1000000 events, P7's --quick store)
#
# What it does:
#   1. builds the release benchmark binary (Benchmarks package, scratch Benchmarks/.build-bench);
#   2. `reading-benchmarks --make-store N` creates a store of N events of the seeded DemoHistory
#      mix (the P7 store of a --quick run: its reader, zone and instant of the home list are
#      printed on its QUERY line); OPEN_STORE="DIR READER ZONE MICROSECONDS" reuses a store instead;
#   3. runs `reading-benchmarks --child-open` (P7's child) and `--child-open-raw` (its baseline)
#      under `valgrind --tool=callgrind`, collecting only inside `measuredOpen` / `measuredRawOpen`
#      (--toggle-collect on their mangled names): program start and exit are not counted, the
#      Swift runtime's first-use work inside them is. With OPEN_MAP_SIZE=1 GiB: valgrind cannot
#      reserve P7's 64 GiB map (mdb_env_open fails with EINVAL), and LMDB maps at least the data
#      file's size whatever the option says;
#   4. runs both children natively under `strace -f` (with P7's own 64 GiB map), counting the system
#      calls between the two markers `measuredOpen` writes to stderr (OPEN_MARKERS=1);
#   5. prints Ir of both and their ratio, the minor page faults of the native runs' measured parts
#      (getrusage), the system calls of both by name, and the top 15 functions of the store's open
#      by inclusive and by self Ir.
#
# Environment: CALLGRIND_KEEP=1 keeps the store, the callgrind outputs and the traces.
# Needs valgrind and strace (apt-get install -y valgrind strace).
set -euo pipefail
cd "$(dirname "$0")/.."

events="${1:-1000000}"
for tool in valgrind strace; do
    command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y $tool" >&2; exit 1; }
done

# shellcheck source=Scripts/callgrind-functions.sh
source Scripts/callgrind-functions.sh
binary="$(benchmark_binary)"
openSymbol="$(measured_symbol "$binary" measuredOpen)"
rawSymbol="$(measured_symbol "$binary" measuredRawOpen)"

export SWIFT_DETERMINISTIC_HASHING=1
work="$(mktemp -d -t open-instructions.XXXXXX)"
store=""
made=0
cleanup() {
    if [[ "${CALLGRIND_KEEP:-0}" == 1 ]]; then echo "kept: $work ${store}" >&2; return; fi
    rm -rf "$work"
    if [[ "$made" == 1 && -n "$store" ]]; then rm -rf "$store"; fi
}
trap cleanup EXIT

if [[ -n "${OPEN_STORE:-}" ]]; then
    read -r store reader zone asOf <<<"$OPEN_STORE"
else
    echo "== creating a store of $events events ==" >&2
    "$binary" --make-store "$events" >"$work/make.txt"
    store="$(sed -n 's/^RESULT //p' "$work/make.txt")"
    made=1
    read -r reader zone asOf < <(sed -n 's/^QUERY //p' "$work/make.txt")
    echo "   OPEN_STORE=\"$store $reader $zone $asOf\" reuses it (with CALLGRIND_KEEP=1)" >&2
fi
[[ -d "$store" && -n "${asOf:-}" ]] || { echo "no store directory or no query: '$store' '${reader:-}'" >&2; exit 1; }
openArgs=(--child-open "$store" "$reader" "$zone" "$asOf")
rawArgs=(--child-open-raw "$store")

stripped="$(stripped_copy "$binary" "$work")"

# callgrind NAME SYMBOL ARGS...: the child under callgrind, collecting inside SYMBOL only; prints Ir.
callgrind() {
    local name="$1" measured="$2"
    shift 2
    OPEN_MAP_SIZE=$((1 << 30)) valgrind --tool=callgrind --callgrind-out-file="$work/$name.callgrind" \
        --toggle-collect="$measured" "$stripped" "$@" >"$work/$name.txt" 2>"$work/$name.valgrind" || {
        cat "$work/$name.valgrind" "$work/$name.txt" >&2; exit 1; }
    grep -q '^RESULT ' "$work/$name.txt" || { echo "the $name child printed no RESULT" >&2; exit 1; }
    awk '/^(summary|totals):/ {print $2; exit}' "$work/$name.callgrind"
}
echo "== the open and its first home list under callgrind ==" >&2
openIr="$(callgrind open "$openSymbol" "${openArgs[@]}")"
echo "== the raw open and last record under callgrind ==" >&2
rawIr="$(callgrind raw "$rawSymbol" "${rawArgs[@]}")"

# syscalls NAME ARGS...: the child natively under strace -f; prints "count name" lines of the
# system calls between the markers, most frequent first, and a total.
syscalls() {
    local name="$1"
    shift
    OPEN_MARKERS=1 strace -f -qq -o "$work/$name.strace" "$binary" "$@" >"$work/$name.strace.txt" 2>/dev/null
    awk '/write\(2, "open-instructions: begin/ { on = 1; next }
         /write\(2, "open-instructions: end/ { on = 0 }
         on && !/resumed>/ { sub(/^[0-9]+ +/, ""); sub(/\(.*/, ""); n[$0]++; total++ }
         END { for (s in n) printf "%6d %s\n", n[s], s; printf "%6d total\n", total }' "$work/$name.strace" | sort -k1,1nr
}
echo "== both children under strace ==" >&2
openCalls="$(syscalls open "${openArgs[@]}")"
rawCalls="$(syscalls raw "${rawArgs[@]}")"

top() { callgrind_functions "$work/open.callgrind" "$1" 'measuredOpen' | awk 'n < 15 { print; n++ }'; }

echo
echo "store: $store ($(du -sh "$store/data.mdb" | cut -f1) data.mdb); $(valgrind --version)"
echo "open + first home list (measuredOpen): $openIr instructions (Ir)"
echo "raw open + last record (measuredRawOpen): $rawIr instructions (Ir)"
awk -v s="$openIr" -v r="$rawIr" 'BEGIN { printf "ratio: %.2fx raw (%d instructions more)\n", s / r, s - r }'
echo
faults() { awk '/^RESULT / { print $4 }' "$work/$1.strace.txt"; }
echo "minor page faults (native run, getrusage): open + first home list $(faults open), raw $(faults raw)"
echo
echo "system calls of the open + first home list:"
echo "$openCalls"
echo
echo "system calls of the raw open + last record:"
echo "$rawCalls"
echo
echo "top 15 functions of the open by inclusive Ir (outside callers and partial-apply forwarders left out):"
top yes
echo
echo "top 15 functions of the open by self Ir:"
top no
