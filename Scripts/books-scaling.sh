#!/usr/bin/env bash
# How the cost of an event grows with one reader's number of books (issue 37): for each N, one
# reader's history of N books, each added and read once (a BookAdded and a PagesRead, all in one
# month, so one year's view holds every book), is imported from JSON Lines (`replay import`),
# verified and rebuilt. The script prints the events, the wall time of each step, the time per
# event, and each step's time against the N before it. The goal: at 100,000 books at most 3x the time
# of 40,000 (2.5x the events), so the cost of an event does not grow with the books.
#
# Usage: Scripts/books-scaling.sh [N ...]      (default: 40000 100000)
#
# Environment: REPLAY, a replay binary to measure (default: the release build in .build-release,
# built here first).
set -euo pipefail
cd "$(dirname "$0")/.."
replay=${REPLAY:-}
if [ -z "$replay" ]; then
    swift build -c release --scratch-path .build-release --product replay >&2
    replay="$(swift build -c release --scratch-path .build-release --show-bin-path)/replay"
fi
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(40000 100000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reader=5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13

seconds() { # runs "$@", prints its wall time in seconds (3 decimals) on stdout
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}

printf '%-8s %9s %10s %10s %10s %12s %12s %12s\n' books events import_s verify_s rebuild_s import_us/ev verify_us/ev rebuild_us/ev
first=""
for n in "${sizes[@]}"; do
    file="$work/history.jsonl"
    # Book i and its two events get UUIDs made from i; positions count from 1.
    awk -v rows="$n" -v reader="$reader" 'BEGIN {
        for (i = 1; i <= rows; i++) {
            book = sprintf("00000000-0000-4000-8000-%012d", i)
            at = sprintf("2024-01-%02dT10:%02d:00.000000Z", 1 + i % 28, i % 60)
            common = sprintf("\"occurredAt\":\"%s\",\"recordedAt\":\"%s\",\"reader\":\"%s\",\"schemaVersion\":1,\"stream\":\"book:%s:%s\",\"timeZone\":\"Asia/Seoul\"",
                at, at, reader, reader, book)
            printf "{\"data\":{\"book\":\"%s\",\"metadata\":{\"authors\":\"Author\",\"pageCount\":300,\"title\":\"Book %d\"},\"status\":\"reading\"},\"eventID\":\"00000000-0000-4000-9000-%012d\",\"position\":%d,%s,\"streamVersion\":1,\"type\":\"BookAdded\"}\n",
                book, i, 2 * i - 1, 2 * i - 1, common
            printf "{\"data\":{\"book\":\"%s\",\"position\":%d},\"eventID\":\"00000000-0000-4000-9000-%012d\",\"position\":%d,%s,\"streamVersion\":2,\"type\":\"PagesRead\"}\n",
                book, 10 + i % 200, 2 * i, 2 * i, common
        }
    }' > "$file"
    store="$work/store-$n"
    import_s=$(seconds "$replay" import "$file" --store "$store")
    events=$("$replay" stats --store "$store" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["lastPosition"])')
    verify_s=$(seconds "$replay" verify --store "$store")
    rebuild_s=$(seconds "$replay" rebuild --store "$store")
    printf '%-8s %9s %10s %10s %10s %12.1f %12.1f %12.1f\n' "$n" "$events" "$import_s" "$verify_s" "$rebuild_s" \
        "$(awk -v t="$import_s" -v e="$events" 'BEGIN { print t * 1e6 / e }')" \
        "$(awk -v t="$verify_s" -v e="$events" 'BEGIN { print t * 1e6 / e }')" \
        "$(awk -v t="$rebuild_s" -v e="$events" 'BEGIN { print t * 1e6 / e }')"
    if [ -n "$first" ]; then
        read -r n0 i0 v0 r0 <<< "$first"
        awk -v n="$n" -v n0="$n0" -v i="$import_s" -v i0="$i0" -v v="$verify_s" -v v0="$v0" -v r="$rebuild_s" -v r0="$r0" 'BEGIN {
            printf "  %d books against %d (%.2fx the books): import %.2fx, verify %.2fx, rebuild %.2fx the time (goal: at most 3x the time at 2.5x the books)\n",
                n, n0, n / n0, i / i0, v / v0, r / r0 }'
    fi
    first="$n $import_s $verify_s $rebuild_s"
    rm -rf "$store"
done
