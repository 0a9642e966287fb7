#!/usr/bin/env bash
# Instructions per folded event of a rebuild, counted by callgrind: a figure that does not move
# with the machine's load (unlike P4's events/s), so two versions of the code can be compared
# exactly. A documented manual measurement; not part of .ci/run (a run takes a minute or two
# after the build).
#
# Usage: Scripts/rebuild-instructions.sh [N]            (default N = 20000 events)
#        Scripts/rebuild-instructions.sh --append [N]   instructions per appended event instead: the
#            P1 path (appendRecorded in chunks of 1,000 into a new store, views folded), counted
#            inside the benchmark's `measuredAppend` (`reading-benchmarks --append-once N`);
#            APPEND_CHUNK=1 appends one event per durable transaction instead (the P2 path)
#
# What it does:
#   1. builds the release benchmark binary (Benchmarks package, scratch Benchmarks/.build-bench);
#   2. `reading-benchmarks --make-store N` creates a store of N events of the seeded DemoHistory
#      mix (the same events as P4), natively, in a temporary directory;
#   3. `reading-benchmarks --rebuild-once DIR` opens that store and calls ReadingStore.rebuild()
#      once, in a child process under `valgrind --tool=callgrind`, collecting only between entry
#      and exit of the benchmark's `measuredRebuild` function (--toggle-collect on its mangled
#      name, looked up with nm): program start, opening the store and exit are not counted;
#   4. prints the total instructions (Ir) of the rebuild, Ir / folded event, and the top 10
#      functions by inclusive and by self Ir (callgrind_annotate, names demangled).
#
# The rebuild counted is the whole ReadingStore.rebuild(): catching up, folding the log in chunks
# of write transactions, the commits, and the digest of the rebuilt views at the end (its share
# is the `viewDigest` line of the inclusive list).
# Swift's per-process random hash seed is fixed (SWIFT_DETERMINISTIC_HASHING=1) so dictionary
# work is the same from run to run.
#
# Environment: CALLGRIND_KEEP=1 keeps the store and callgrind.out in the temporary directory.
# Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=rebuild
if [[ "${1:-}" == "--append" ]]; then mode=append; shift; fi
events="${1:-20000}"
measured=measuredRebuild
if [[ "$mode" == append ]]; then measured=measuredAppend; fi
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }

# shellcheck source=Scripts/callgrind-functions.sh
source Scripts/callgrind-functions.sh
binary="$(benchmark_binary)"
symbols="$(measured_symbol "$binary" "$measured")"

# The rebuild's fold workers (RebuildFolder.run, in EventStoreLMDB, one thread per job:
# ReadingStore.defaultRebuildJobs, the processor cores) are collected too: callgrind toggles
# collection per thread, and those threads never enter measuredRebuild. Absent in builds whose
# rebuild folds on the calling thread.
toggles=(--toggle-collect="$symbols")
folder=""
if [[ "$mode" == rebuild ]]; then
    folder="$(nm --defined-only "$binary" | awk '{print $3}' | grep -E '^\$s14EventStoreLMDB13RebuildFolderV3runyyKF$' || true)"
    if [[ -n "$folder" ]]; then toggles+=(--toggle-collect="$folder"); fi
fi

export SWIFT_DETERMINISTIC_HASHING=1
work="$(mktemp -d -t rebuild-instructions.XXXXXX)"
store=""
cleanup() {
    if [[ "${CALLGRIND_KEEP:-0}" == 1 ]]; then echo "kept: $work ${store}" >&2; return; fi
    rm -rf "$work"
    if [[ -n "$store" ]]; then rm -rf "$store"; fi
}
trap cleanup EXIT

if [[ "$mode" == rebuild ]]; then
    echo "== creating a store of $events events ==" >&2
    store="$("$binary" --make-store "$events" | sed -n 's/^RESULT //p')"
    [[ -d "$store" ]] || { echo "--make-store printed no store directory" >&2; exit 1; }
fi

stripped="$(stripped_copy "$binary" "$work")"

out="$work/callgrind.out"
if [[ "$mode" == rebuild ]]; then
    echo "== rebuilding it under callgrind (only $symbols collected) ==" >&2
    child=(--rebuild-once "$store")
else
    echo "== appending $events events under callgrind (only $symbols collected) ==" >&2
    child=(--append-once "$events")
fi
valgrind --tool=callgrind --callgrind-out-file="$out" "${toggles[@]}" \
    "$stripped" "${child[@]}" >"$work/child.txt" 2>"$work/valgrind.txt" || {
    cat "$work/valgrind.txt" >&2; exit 1; }
read -r folded digest < <(sed -n 's/^RESULT //p' "$work/child.txt")
total="$(awk '/^(summary|totals):/ {print $2; exit}' "$out")"
if [[ -z "$total" || "$total" == 0 || -z "$folded" || "$folded" == 0 ]]; then
    echo "no instructions or no events counted (Ir '$total', events '$folded')" >&2
    cat "$work/valgrind.txt" >&2
    exit 1
fi

functions() { callgrind_functions "$out" "$1" 'measuredRebuild|measuredAppend'; }
top10() { functions "$1" | awk 'n < 10 { print; n++ }'; }

digestIr="$(functions yes | awk '/ViewDigest\.of/ && !found { gsub(",", "", $1); print $1; found = 1 }')"
echo
if [[ "$mode" == append ]]; then
    echo "appendRecorded of $folded events in chunks of ${APPEND_CHUNK:-1000}, $(valgrind --version), Ir counted inside measuredAppend only"
    echo "instructions (Ir) of the appends: $total"
    awk -v t="$total" -v n="$folded" 'BEGIN { printf "instructions per appended event: %.0f\n", t / n }'
else
echo "rebuild of $folded events (view digest ${digest:0:12}…), $(valgrind --version), Ir counted inside measuredRebuild${folder:+ and RebuildFolder.run (the fold workers)} only (all threads)"
echo "instructions (Ir) of the rebuild: $total"
awk -v t="$total" -v n="$folded" -v d="${digestIr:-0}" 'BEGIN {
    printf "instructions per folded event: %.0f\n", t / n
    if (d > 0) printf "  of which the digest of the rebuilt views at the end: %.0f per event (%.1f%%); without it %.0f\n", d / n, d / t * 100, (t - d) / n
}'
fi
echo
echo "top 10 functions by inclusive Ir (outside callers and partial-apply forwarders left out):"
top10 yes
echo
echo "top 10 functions by self Ir:"
top10 no
