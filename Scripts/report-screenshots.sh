#!/usr/bin/env bash
# Regenerates docs/report-light.png and docs/report-dark.png: the 2025 report of the first demo
# reader, rendered by headless Chromium (Debian: apt-get install -y chromium fonts-noto-cjk).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swift build --product replay
bin=$(swift build --show-bin-path)
"$bin/replay" demo --store "$work/store" --quiet
"$bin/replay" report --store "$work/store" --reader 689ddf5d-2f38-432b-afc0-411c18fb0367 --year 2025 \
    --as-of 2025-04-30 --out "$work/report.html"
mkdir -p docs
for scheme in light dark; do
    extra=()
    [ "$scheme" = dark ] && extra=(--blink-settings=preferredColorScheme=0)
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" "${extra[@]}" \
        --window-size=1280,2900 --screenshot="docs/report-$scheme.png" "file://$work/report.html" 2>/dev/null
done
echo "wrote docs/report-light.png docs/report-dark.png"
