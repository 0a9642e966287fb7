#!/usr/bin/env bash
# Compares what two `replay` binaries print for the same stores: `show --json`, `show` (text) and
# `report` of every reader, on demo stores of several seeds (issue 37: the outputs stay
# byte-identical across a change of the views, except for fields the change adds).
#
#   Scripts/compare-outputs.sh OLD_REPLAY NEW_REPLAY [SEED ...]     (default seeds: 1 2 3)
#
# The stores are written once by OLD_REPLAY (`demo --readers 20`) and read by both. Before
# comparing, the reading-speed additions of issue 37 item 5 are taken out of the new output (the
# `readingSpeed` key of `show --json`, the "Reading speed" section of the text, the `speed` and
# `timeleft` figures of the report); set KEEP_NEW=1 to compare everything. Prints one line per
# seed and exits 1 at the first difference (diffs under $WORK, kept).
set -euo pipefail
old=${1:?usage: compare-outputs.sh OLD_REPLAY NEW_REPLAY [SEED ...]}
new=${2:?usage: compare-outputs.sh OLD_REPLAY NEW_REPLAY [SEED ...]}
shift 2
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
WORK=${WORK:-$(mktemp -d)}
strip() {  # strip KIND FILE: the new output less what the change adds
    if [ "${KEEP_NEW:-0}" = 1 ]; then cat "$2"; return; fi
    python3 - "$1" "$2" <<'EOF'
import json, re, sys
kind, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
if kind == "json":
    documents = json.loads(text)
    for d in documents:
        d.pop("readingSpeed", None)
    text = json.dumps(documents, sort_keys=True, ensure_ascii=False)
elif kind == "text":
    # The section runs from its heading to the blank line after it.
    text = re.sub(r"\nReading speed \(.*?\n\n", "\n", text, flags=re.S)
elif kind == "html":
    text = re.sub(r'<figure id="(speed|timeleft)".*?</figure>', "", text, flags=re.S)
sys.stdout.write(text)
EOF
}
canon() {  # the old output in the same form
    if [ "$1" = json ] && [ "${KEEP_NEW:-0}" != 1 ]; then
        python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True, ensure_ascii=False), end="")' "$2"
    else cat "$2"; fi
}
for seed in "${seeds[@]}"; do
    dir=$WORK/seed-$seed
    mkdir -p "$dir"
    "$old" demo --store "$dir/store" --readers 20 --seed "$seed" --quiet
    readers=$("$old" stats --store "$dir/store" | sed -n 's/^  \([0-9a-f-]\{36\}\): .*/\1/p')
    compared=0
    for side in old new; do
        bin=$old; [ $side = new ] && bin=$new
        "$bin" show --store "$dir/store" --json > "$dir/$side.json"
        "$bin" show --store "$dir/store" > "$dir/$side.txt"
        for reader in $readers; do
            "$bin" report --store "$dir/store" --reader "$reader" --year 2025 --as-of 2025-03-15 --out "$dir/$side-$reader.html" > /dev/null
        done
    done
    for kind in json txt; do
        k=$kind; [ $kind = txt ] && k=text
        canon $k "$dir/old.$kind" > "$dir/old.$kind.cmp"
        strip $k "$dir/new.$kind" > "$dir/new.$kind.cmp"
        if ! cmp -s "$dir/old.$kind.cmp" "$dir/new.$kind.cmp"; then
            diff "$dir/old.$kind.cmp" "$dir/new.$kind.cmp" > "$dir/$kind.diff" || true
            echo "seed $seed: show ($k) differs: $dir/$kind.diff"; exit 1
        fi
        compared=$((compared + 1))
    done
    for reader in $readers; do
        cp "$dir/old-$reader.html" "$dir/old-$reader.cmp"
        strip html "$dir/new-$reader.html" > "$dir/new-$reader.cmp"
        if ! cmp -s "$dir/old-$reader.cmp" "$dir/new-$reader.cmp"; then
            diff "$dir/old-$reader.cmp" "$dir/new-$reader.cmp" > "$dir/report-$reader.diff" || true
            echo "seed $seed: report of $reader differs: $dir/report-$reader.diff"; exit 1
        fi
        compared=$((compared + 1))
    done
    echo "seed $seed: $(echo $readers | wc -w) readers, $compared outputs identical ($(wc -c < "$dir/new.json") bytes of show --json)"
done
