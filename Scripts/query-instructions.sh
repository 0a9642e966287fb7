#!/usr/bin/env bash
# P5 measured exactly: the instructions (callgrind) of each P5 query, asked of the LMDB store
# (each in its own read transaction, as P5 asks it) and of the in-memory views, figures that do
# not move with the machine's load, unlike P5's microseconds. A documented manual measurement;
# not part of .ci/run.
#
# Usage: Scripts/query-instructions.sh [R]   (default R = 20 repetitions of each query)
#
# What it does:
#   1. builds the release benchmark binary (Benchmarks package, scratch Benchmarks/.build-bench);
#   2. for each P5 query (home list, streaks, calendar month, book detail), runs
#      `reading-benchmarks --child-queries QUERY R` under `valgrind --tool=callgrind`: the child
#      builds P5's workload (one reader's seeded 3,650-day history appended to a store and folded in
#      memory; not counted), asks the query 3 times of each (P5's warm-up; not counted), then R
#      times of each, collecting only inside `measuredStoreQueries` and `measuredMemoryQueries`
#      (--toggle-collect);
#   3. prints Ir per query for both (inclusive Ir of each measured function / R: a warm steady
#      state, as P5's median), and the top 12 functions by self Ir of the home list and book
#      detail queries.
#
# Environment: CALLGRIND_KEEP=1 keeps the callgrind outputs. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."

repetitions="${1:-20}"
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }

# shellcheck source=Scripts/callgrind-functions.sh
source Scripts/callgrind-functions.sh
binary="$(benchmark_binary)"
storeSymbol="$(measured_symbol "$binary" measuredStoreQueries)"
memorySymbol="$(measured_symbol "$binary" measuredMemoryQueries)"

export SWIFT_DETERMINISTIC_HASHING=1
work="$(mktemp -d -t query-instructions.XXXXXX)"
cleanup() { if [[ "${CALLGRIND_KEEP:-0}" == 1 ]]; then echo "kept: $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT

stripped="$(stripped_copy "$binary" "$work")"

# inclusive FILE SYMBOL: the inclusive Ir of the measured function SYMBOL.
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" \
        | awk -v s="$2" '!found && index($0, s) { gsub(/,/, "", $1); print $1; found = 1 }'
}

printf '%-16s %14s %14s\n' "query" "store Ir/call" "memory Ir/call"
for query in home-list streaks calendar-month book-detail; do
    out="$work/$query.callgrind"
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$storeSymbol" --toggle-collect="$memorySymbol" \
        "$stripped" --child-queries "$query" "$repetitions" >"$work/$query.txt" 2>"$work/$query.valgrind" || {
        cat "$work/$query.valgrind" "$work/$query.txt" >&2; exit 1; }
    grep -q '^RESULT ' "$work/$query.txt" || { echo "the $query child printed no RESULT" >&2; exit 1; }
    storeIr="$(inclusive "$out" "$storeSymbol")"
    memoryIr="$(inclusive "$out" "$memorySymbol")"
    [[ -n "$storeIr" && -n "$memoryIr" ]] || { echo "no inclusive figure for a measured function in $out" >&2; exit 1; }
    printf '%-16s %14s %14s\n' "$query" "$((storeIr / repetitions))" "$((memoryIr / repetitions))"
done
echo
echo "$(valgrind --version); R = $repetitions"
for query in home-list book-detail; do
    echo
    echo "top 12 functions of the $query queries (store and memory) by self Ir:"
    callgrind_functions "$work/$query.callgrind" no 'measuredStoreQueries|measuredMemoryQueries' | awk 'n < 12 { print; n++ }'
done
