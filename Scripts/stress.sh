#!/usr/bin/env bash
# Long runs of the reliability and privacy tests; prints the figures each test reports
# (lines starting with "RELIABILITY").
#
# Usage: Scripts/stress.sh [quick|long]     (default: long)
#   quick  the CI defaults (what `swift test --filter 'Reliability|Privacy|StoreHardening|SyncConvergenceRandom|SpilledPages|BackupVerifiesCopy|SyncDamagedStore'` runs)
#   long   the long versions below
#
# Environment variables (read by the tests; CI defaults in brackets, long-run values set here
# unless already set in the environment):
#   RELIABILITY_KILL_TRIALS         [10]   SIGKILL trials of a ReadingStore writer (single
#                                          execute commands and appendRecorded batches alternate)      long: 200
#   RELIABILITY_DAMAGE_TRIALS       [40]   damaged copies of data.mdb checked with `replay verify`
#                                          and `replay export`                                          long: 1000
#   FUZZ_INPUTS                     [20000] random and mutated inputs across every decoder               long: 1000000
#   RELIABILITY_THREADS             [4]    writer threads in each of the 2 processes                   long: 8
#   RELIABILITY_APPENDS_PER_THREAD  [300]  single-event appends per thread                             long: 10000
#   RELIABILITY_SNAPSHOT_APPENDS    [5000] events appended while another process holds a snapshot     long: 100000
#   RELIABILITY_MAP_TARGET_MB       [64]   grow the map from 256 KiB until data.mdb reaches this size  long: 1100
#   RELIABILITY_LOCKFILE_TRIALS     [3]    lock.mdb deleted under a writer, then a second writer       long: 100
#   RELIABILITY_SHORTFILE_TRIALS    [24]   copies of data.mdb cut short, opened writable and read-only long: 2000
#   RELIABILITY_SEED                       seeds of the random choices (kill delays, damage, fuzz)
#   BACKUP_FLIP_TRIALS              [12]   copies of data.mdb with one flipped bit backed up with
#                                          `replay backup`: a usable copy or one refusal line           long: 300
#   SYNC_FLIP_TRIALS                [12]   copies of data.mdb with one flipped bit synced with
#                                          `replay sync --with`, either side: no signal, one line       long: 300
#   SYNC_SOAK_SEEDS                 [3]    seeds of the randomized convergence test (devices, a
#                                          partner, imports, copies, restores, injected records)        long: 200
#   SYNC_SOAK_STEPS                 [120]  steps per seed                                              long: 300
#   SYNC_OUTAGE_SECONDS             [20]   seconds the real sync server is down while two devices sync
#                                          (Server package: `Server/Scripts/outage.sh`, 180)
#   LMDB_SPILL_TEST                 [runs when the temp dir has 4 GiB free] a write transaction
#                                          past LMDB's dirty room reads its spilled pages back          long: 1
#   STRESS_CONFIG                   [release when testable imports build there, else debug]
#   STRESS_SCRATCH                  [.build-stress] SwiftPM scratch path
#
# The full-disk test mounts a 4 MB tmpfs (root needed); without permission it prints SKIPPED.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-long}"
if [[ "$mode" == long ]]; then
    export RELIABILITY_KILL_TRIALS="${RELIABILITY_KILL_TRIALS:-200}"
    export RELIABILITY_DAMAGE_TRIALS="${RELIABILITY_DAMAGE_TRIALS:-1000}"
    export FUZZ_INPUTS="${FUZZ_INPUTS:-1000000}"
    export RELIABILITY_THREADS="${RELIABILITY_THREADS:-8}"
    export RELIABILITY_APPENDS_PER_THREAD="${RELIABILITY_APPENDS_PER_THREAD:-10000}"
    export RELIABILITY_SNAPSHOT_APPENDS="${RELIABILITY_SNAPSHOT_APPENDS:-100000}"
    export RELIABILITY_MAP_TARGET_MB="${RELIABILITY_MAP_TARGET_MB:-1100}"
    export RELIABILITY_LOCKFILE_TRIALS="${RELIABILITY_LOCKFILE_TRIALS:-100}"
    export RELIABILITY_SHORTFILE_TRIALS="${RELIABILITY_SHORTFILE_TRIALS:-2000}"
    export BACKUP_FLIP_TRIALS="${BACKUP_FLIP_TRIALS:-300}"
    export SYNC_FLIP_TRIALS="${SYNC_FLIP_TRIALS:-300}"
    export SYNC_SOAK_SEEDS="${SYNC_SOAK_SEEDS:-200}"
    export SYNC_SOAK_STEPS="${SYNC_SOAK_STEPS:-300}"
    export LMDB_SPILL_TEST="${LMDB_SPILL_TEST:-1}"
fi
scratch="${STRESS_SCRATCH:-.build-stress}"
config="${STRESS_CONFIG:-release}"

echo "== reliability stress ($mode, $config) =="
env | grep -E '^(RELIABILITY_|FUZZ_|SYNC_SOAK_|LMDB_SPILL_|BACKUP_FLIP_|SYNC_FLIP_)' | sort || true

build() {
    # Release needs -enable-testing for the suites' @testable imports; debug has it already.
    if [[ "$1" == release ]]; then
        swift build -c release --scratch-path "$scratch" --build-tests -Xswiftc -enable-testing
    else
        swift build -c debug --scratch-path "$scratch" --build-tests
    fi
}
if ! build "$config"; then
    if [[ "$config" == release ]]; then
        echo "release build with testable imports failed; falling back to debug" >&2
        config=debug
        build debug
    else
        exit 1
    fi
fi

log="$(mktemp -t reliability-XXXXXX.log)"
start=$(date +%s)
set +e
swift test -c "$config" --scratch-path "$scratch" --skip-build --filter 'Reliability|Privacy|StoreHardening|SyncConvergenceRandom|SpilledPages|BackupVerifiesCopy|SyncDamagedStore' 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s)

echo
echo "== figures ($mode, $config, $((end - start)) s, exit $status) =="
grep -E '^(RELIABILITY|SYNC-SOAK)' "$log" || echo "(no figures printed)"
grep -E 'Test .* (passed|failed) after' "$log" | sed -E 's/^.*Test /Test /' || true
echo "full log: $log"
exit "$status"
