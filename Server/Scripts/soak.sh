#!/usr/bin/env bash
# The long version of the randomized convergence test through the real server (issue 22): three
# devices of one reader plus a partner, the same rows imported on several devices, a restored
# backup, records the server refuses, random sync orders; every device must end with the union.
#   Server/Scripts/soak.sh [SEEDS]     (default 200; CI runs 3)
# Needs PostgreSQL's binaries (apt-get install postgresql); each seed starts its own database.
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build --package-path Server --build-tests
SYNC_SOAK_SEEDS="${1:-200}" swift test --package-path Server --skip-build --filter RandomConvergenceTests
