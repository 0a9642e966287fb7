#!/usr/bin/env bash
# Compares what two `replay` binaries print for every store the test suite leaves behind (issue 37:
# `show --json` and `show` stay byte-identical across a change of the views on every scenario
# store of the test suite, not only on demo stores; Scripts/compare-outputs.sh does those).
#
#   Scripts/compare-scenario-outputs.sh OLD_REPLAY NEW_REPLAY [TEST_FILTER]
#
# 1. Runs the root package's tests (already built: `swift build --build-tests`; all of them, or
#    those TEST_FILTER names) with KEEP_TEST_STORES=$WORK/stores: every temporary directory a test
#    removes is moved there instead (TestSupport's `TempDirectory.remove()`). SKIP_TESTS=1 reuses
#    the stores of an earlier run in $WORK.
# 2. For every LMDB environment among them (a directory holding `data.mdb`), copies it to one fixed
#    path for each binary (a store may be upgraded or caught up by the open) and runs
#    `show --json --as-of 2026-01-01`, `show --as-of 2026-01-01` and the `report` of up to three of
#    its readers (their default "today" and year), keeping stdout, stderr, the exit status and the
#    page of each: a store that neither binary opens (a bare LMDB environment, a damaged store)
#    must fail the same way.
# 3. Prints the number of stores, of stores read, and every difference (diffs under $WORK, kept);
#    exits 1 when there is one.
#
# Both binaries must read the stores' formats (the same views version, or the new one able to
# upgrade them). Fields a change adds are not stripped: compare two builds that print the same fields.
set -euo pipefail
old=${1:?usage: compare-scenario-outputs.sh OLD_REPLAY NEW_REPLAY [TEST_FILTER]}
new=${2:?usage: compare-scenario-outputs.sh OLD_REPLAY NEW_REPLAY [TEST_FILTER]}
filter=${3:-}
cd "$(dirname "$0")/.."
WORK=${WORK:-$(mktemp -d)}
keep=$WORK/stores
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    rm -rf "$keep"
    mkdir -p "$keep"
    args=(--skip-build)
    [ -n "$filter" ] && args+=(--filter "$filter")
    if ! KEEP_TEST_STORES=$keep swift test "${args[@]}" > "$WORK/tests.log" 2>&1; then
        echo "the tests failed: $WORK/tests.log" >&2
        exit 1
    fi
fi
mapfile -t stores < <(find "$keep" -name data.mdb -printf '%h\n' | sort -u)
read=0 differing=0 reports=0
for store in "${stores[@]}"; do
    for side in old new; do
        bin=$old; [ $side = new ] && bin=$new
        rm -rf "$WORK/store"
        cp -a "$store" "$WORK/store"
        out=$WORK/$side.out
        : > "$out"
        for json in --json ""; do
            set +e
            # shellcheck disable=SC2086
            "$bin" show --store "$WORK/store" --as-of 2026-01-01 $json >> "$out" 2>> "$out.err"
            echo "exit $?" >> "$out"
            set -e
            cat "$out.err" >> "$out"
            : > "$out.err"
        done
        # The report of up to three readers (their "today" and year: their last event's), named
        # by the old binary's `show --json` (the same list for both: a difference shows above).
        if [ $side = old ]; then
            readers=$("$bin" show --store "$WORK/store" --json 2>/dev/null \
                | python3 -c 'import json, sys; [print(r["reader"]) for r in json.load(sys.stdin)[:3]]' 2>/dev/null || true)
        fi
        for reader in $readers; do
            set +e
            rm -f "$WORK/report.html"
            "$bin" report --store "$WORK/store" --reader "$reader" --out "$WORK/report.html" >> "$out" 2>> "$out.err"
            echo "report $reader exit $?" >> "$out"
            set -e
            [ -f "$WORK/report.html" ] && cat "$WORK/report.html" >> "$out"
            cat "$out.err" >> "$out"
            : > "$out.err"
            reports=$((reports + 1))
        done
    done
    grep -q '^exit 0$' "$WORK/new.out" && read=$((read + 1))
    if ! cmp -s "$WORK/old.out" "$WORK/new.out"; then
        differing=$((differing + 1))
        name=$(basename "$(dirname "$store")")-$(basename "$store")
        diff "$WORK/old.out" "$WORK/new.out" > "$WORK/$name.diff" || true
        echo "differs: $store ($WORK/$name.diff)"
    fi
done
echo "${#stores[@]} stores the tests left, $read read by the new binary (the rest refused by both alike), $((reports / 2)) readers' reports, $differing with a difference (work: $WORK)"
[ "$differing" = 0 ]
