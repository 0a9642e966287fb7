#!/usr/bin/env bash
# The long version of the outage test (issue 39): the real server is stopped for SECONDS while
# two devices sync with the default client, then restarted on the same port; both syncs must
# complete with nothing lost (the client waits out up to 5 minutes, `RetryPolicy.maxOutage`).
#   Server/Scripts/outage.sh [SECONDS]     (default 180; CI runs 20)
# Needs PostgreSQL's binaries (apt-get install postgresql).
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build --package-path Server --build-tests
SYNC_OUTAGE_SECONDS="${1:-180}" swift test --package-path Server --skip-build --filter OutageTests
