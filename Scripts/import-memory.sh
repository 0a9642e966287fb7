#!/usr/bin/env bash
# Peak resident memory and speed of `replay import-from` / `replay import` on a generated input
# (issues 26 and 36): prints the rows, the peak RSS (from `/usr/bin/time -v`), the wall time and
# rows/s, and fails when the peak is over the bound.
#
# Usage: Scripts/import-memory.sh [all | goodreads [ROWS] | jsonl [EVENTS] | koreader [STAYS] | koreader-wide [STAYS]]
#   all            goodreads 200000, goodreads 1000000 and jsonl 1000000, one after the other (the
#                  figures of the README)
#   goodreads      a Goodreads library export of ROWS rows (default 200000); bound 512 MiB
#   jsonl          a JSON Lines file of at least EVENTS events (default 1000000: `replay demo
#                  --events EVENTS` exported), imported with `replay import`; bound 512 MiB
#   koreader       a KOReader statistics.sqlite3: 100 books, STAYS page stays (default 200000),
#                  each on its own minute; bound 512 MiB
#   koreader-wide  one book of 100,000 pages whose STAYS stays (default 2000, one a day) were read
#                  in a 1-page layout, so each rescales to all 100,000 pages; bound 512 MiB
#
# Environment: REPLAY, a replay binary to measure (default: the release build in .build-release,
# built here first).
# Needs /usr/bin/time (GNU time) and, for koreader, the sqlite3 command.
set -euo pipefail
mode=${1:-goodreads}
cd "$(dirname "$0")/.."
replay=${REPLAY:-}
if [ -z "$replay" ]; then
    swift build -c release --scratch-path .build-release --product replay >&2
    replay="$(swift build -c release --scratch-path .build-release --show-bin-path)/replay"
fi
if [ "$mode" = all ]; then
    for run in "goodreads 200000" "goodreads 1000000" "jsonl 1000000"; do
        # shellcheck disable=SC2086
        REPLAY="$replay" bash Scripts/import-memory.sh $run || status=1
    done
    exit "${status:-0}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reader=5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13
bound_mib=512

case "$mode" in
goodreads)
    rows=${2:-200000}
    file="$work/goodreads_library_export.csv"
    awk -v rows="$rows" 'BEGIN {
        print "Book Id,Title,Author,Additional Authors,ISBN13,My Rating,Publisher,Number of Pages,Date Read,Date Added,Exclusive Shelf,My Review,Private Notes,Read Count"
        for (i = 1; i <= rows; i++) {
            d = 1 + i % 28; m = 1 + i % 12; y = 2010 + i % 15
            shelf = (i % 3 == 0) ? "read" : ((i % 3 == 1) ? "to-read" : "currently-reading")
            read = (shelf == "read") ? sprintf("%d/%02d/%02d", y, m, d) : ""
            printf "%d,Book number %d,Author %d,,,%d,Publisher,%d,%s,%d/%02d/%02d,%s,%s,,1\n",
                100000 + i, i, i % 5000, (shelf == "read") ? i % 5 + 1 : 0, 100 + i % 400, read, y, m, d, shelf,
                (i % 7 == 0) ? "A review of book " i : ""
        }
    }' > "$file"
    source=goodreads
    ;;
jsonl)
    rows=${2:-1000000}
    file="$work/events.jsonl"
    "$replay" demo --events "$rows" --quiet --seed 36 --store "$work/demo" 2> /dev/null
    "$replay" export --store "$work/demo" > "$file"
    rows=$(wc -l < "$file")
    rm -rf "$work/demo"
    source=jsonl
    ;;
koreader | koreader-wide)
    file="$work/statistics.sqlite3"
    if [ "$mode" = koreader ]; then
        rows=${2:-200000}
        books="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
               INSERT INTO book SELECT i, 'Book ' || i, 'Author', NULL, 0, 0, 400, NULL, NULL, printf('%032x', i), 0, 0 FROM n;"
        stays="WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $rows - 1)
               INSERT INTO page_stat_data SELECT 1 + i % 100, 1 + (i / 100) % 400, 1600000000 + i * 60, 45, 400 FROM n;"
    else
        rows=${2:-2000}
        books="INSERT INTO book VALUES (1, 'Wide', 'Author', NULL, 0, 0, 100000, NULL, NULL, 'wide', 0, 0);"
        stays="WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $rows - 1)
               INSERT INTO page_stat_data SELECT 1, 1, 1600000000 + i * 86400, 600, 1 FROM n;"
    fi
    sqlite3 "$file" "CREATE TABLE book (id integer PRIMARY KEY, title text, authors text, notes integer, last_open integer,
            highlights integer, pages integer, series text, language text, md5 text, total_read_time integer, total_read_pages integer);
        CREATE TABLE page_stat_data (id_book integer, page integer NOT NULL DEFAULT 0, start_time integer NOT NULL DEFAULT 0,
            duration integer NOT NULL DEFAULT 0, total_pages integer NOT NULL DEFAULT 0, UNIQUE (id_book, page, start_time));
        $books $stays"
    source=koreader
    ;;
*) echo "usage: $0 [all | goodreads [ROWS] | jsonl [EVENTS] | koreader [STAYS] | koreader-wide [STAYS]]" >&2; exit 64 ;;
esac

# Samples the importer's /proc status every 0.2 s for the peaks of its two kinds of resident memory:
# anonymous (the heap: LMDB's dirty pages of the write transaction, the import's own tables) and
# file-backed (pages of data.mdb mapped and touched, which the kernel can drop at any time).
# The bound applies to the peak RSS that GNU time reports, the sum at its highest.
sample() {
    local child="" anon=0 file=0 a f
    while kill -0 "$1" 2> /dev/null; do
        # (Each step may fail as the processes start and end: none may end the sampler.)
        [ -n "$child" ] || child=$(pgrep -P "$1" 2> /dev/null | head -n 1 || true)
        if [ -n "$child" ]; then
            read -r a f <<< "$(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print a + 0, f + 0 }' "/proc/$child/status" 2> /dev/null || echo "0 0")" || true
            if [ "${a:-0}" -gt "$anon" ]; then anon=$a; fi
            if [ "${f:-0}" -gt "$file" ]; then file=$f; fi
        fi
        sleep 0.2
    done
    echo "$anon $file" > "$work/peaks"
}
status=0
if [ "$source" = jsonl ]; then
    /usr/bin/time -v "$replay" import "$file" --store "$work/store" > "$work/out" 2> "$work/time" &
else
    /usr/bin/time -v "$replay" import-from "$source" "$file" --reader "$reader" --zone Asia/Seoul --store "$work/store" \
        > "$work/out" 2> "$work/time" &
fi
importer=$!
sample "$importer" &
sampler=$!
wait "$importer" || status=$?
wait "$sampler" || true
if [ "$status" -ne 0 ]; then
    echo "FAIL: replay import${source:+ ($source)} exited with status $status:" >&2
    grep -v '^\s' "$work/time" >&2 || true
    exit 1
fi
peak_kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$work/time")
echo "mode: $mode, rows: $rows, file: $(du -h "$file" | cut -f1), store: $(du -sh "$work/store" | cut -f1)"
read -r anon_kib file_kib < "$work/peaks" || { anon_kib=0; file_kib=0; }
echo "peak RSS: $((peak_kib / 1024)) MiB (bound $bound_mib MiB), wall time: $wall"
echo "sampled peaks: anonymous $((anon_kib / 1024)) MiB, file-backed (the binary, its libraries, pages of data.mdb mapped) $((file_kib / 1024)) MiB"
echo "replay: $(tail -n 1 "$work/out")"
if [ "$peak_kib" -gt $((bound_mib * 1024)) ]; then
    echo "FAIL: peak RSS over $bound_mib MiB" >&2
    exit 1
fi
