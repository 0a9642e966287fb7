#!/usr/bin/env bash
# Pages written per single-event commit, the way the README's figure is measured (a documented
# manual measurement, not part of .ci/run): a demo store of 20,000 days' worth of events
# (`replay demo --events 20000 --seed 1`: 100 readers), then N single-event imports (new facts of
# one reader, the appendRecorded path: one reader's events of `replay demo --readers 1 --days 30
# --seed 2`, exported, their origins removed), `data.mdb` copied before and after each; each commit
# is counted by Scripts/commit-pages.py and the script prints the mean per table and in all.
#
# Usage: Scripts/commit-pages.sh [REPLAY] [N]
#   REPLAY: the replay binary (default: the debug build's, `swift build --product replay`)
#   N: single-event commits to count (default 8)
# Environment: LONG_READER=1 writes the imported events as the store's reader with the most
#   events instead (a long history: 30-day demo books added to a reader of about 1,000 events), so
#   the commits touch that reader's day, month, run, bucket, year and reader records.
set -euo pipefail
cd "$(dirname "$0")/.."
replay="${1:-$(swift build --show-bin-path)/replay}"
commits="${2:-8}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$replay" demo --store "$work/store" --events 20000 --quiet --seed 1 > /dev/null
"$replay" demo --store "$work/source" --readers 1 --days 30 --seed 2 > /dev/null
# New facts: the origin of each exported line removed, so the import stamps them here.
reader=""
if [[ "${LONG_READER:-0}" == 1 ]]; then
    reader=$("$replay" export --store "$work/store" | python3 -c '
import collections, json, sys
print(collections.Counter(json.loads(line)["reader"] for line in sys.stdin).most_common(1)[0][0])')
fi
"$replay" export --store "$work/source" | python3 -c '
import json, sys
reader = sys.argv[1]
for line in sys.stdin:
    event = json.loads(line)
    for field in ("replica", "sequence", "stamp"):
        event.pop(field, None)
    text = json.dumps(event, ensure_ascii=False)
    print(text.replace(event["reader"], reader) if reader else text)' "$reader" > "$work/lines.jsonl"

# The first lines add the reader's book; the single-event commits are later ones.
head -n 20 "$work/lines.jsonl" > "$work/first.jsonl"
"$replay" import --store "$work/store" "$work/first.jsonl" > /dev/null
for i in $(seq 1 "$commits"); do
    sed -n "$((20 + i))p" "$work/lines.jsonl" > "$work/one.jsonl"
    cp "$work/store/data.mdb" "$work/before.mdb"
    "$replay" import --store "$work/store" "$work/one.jsonl" > /dev/null
    python3 Scripts/commit-pages.py "$work/before.mdb" "$work/store/data.mdb" > "$work/pages.$i.txt"
done
python3 - "$work" "$commits" <<'EOF'
import re, sys
work, n = sys.argv[1], int(sys.argv[2])
per_table, totals = {}, []
for i in range(1, n + 1):
    for line in open(f"{work}/pages.{i}.txt"):
        m = re.match(r"\s+([0-9.]+)\s+(.*?)(\s+\(tree of \d+ pages\))?$", line)
        if not m:
            continue
        value, name = float(m.group(1)), m.group(2)
        if name == "total":
            totals.append(value)
        else:
            per_table[name] = per_table.get(name, 0) + value
print(f"{n} single-event commits; pages written per commit (mean), by table:")
for name, value in sorted(per_table.items(), key=lambda item: -item[1]):
    print(f"  {value / n:7.2f}  {name}")
print(f"  {sum(totals) / n:7.2f}  total (each commit: {', '.join(f'{t:g}' for t in totals)})")
EOF
