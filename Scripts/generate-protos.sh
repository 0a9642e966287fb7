#!/usr/bin/env bash
# Regenerates the Swift code of the storage schema. The generated file is committed; run this only
# after changing Sources/ReadingEvents/Schema/reading_events.proto, and commit both together.
#
# Needs `protoc` (Debian/Ubuntu: apt-get install -y protobuf-compiler) and the protoc-gen-swift
# plugin built from the SAME swift-protobuf version the package resolves (Package.swift:
# from: "1.39.0"; the generated code refuses to compile against an incompatible runtime).
#
#   PROTOC_GEN_SWIFT=/path/to/protoc-gen-swift Scripts/generate-protos.sh
#
# Without PROTOC_GEN_SWIFT, the plugin is built from a swift-protobuf checkout: $SWIFT_PROTOBUF_DIR,
# or a fresh clone of the tag below into a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT_PROTOBUF_VERSION=${SWIFT_PROTOBUF_VERSION:-1.39.0}
plugin=${PROTOC_GEN_SWIFT:-}
if [ -z "$plugin" ]; then
  src=${SWIFT_PROTOBUF_DIR:-}
  if [ -z "$src" ]; then
    src=$(mktemp -d)/swift-protobuf
    git clone --quiet --depth 1 --branch "$SWIFT_PROTOBUF_VERSION" https://github.com/apple/swift-protobuf.git "$src"
  fi
  swift build --package-path "$src" --product protoc-gen-swift -c release
  plugin="$(swift build --package-path "$src" -c release --show-bin-path)/protoc-gen-swift"
fi

out=Sources/ReadingEvents/Codecs/Generated   # outside Schema/, which the target excludes
mkdir -p "$out"
protoc --plugin=protoc-gen-swift="$plugin" \
  --swift_out="$out" --swift_opt=Visibility=Internal \
  -I Sources/ReadingEvents/Schema Sources/ReadingEvents/Schema/reading_events.proto
echo "wrote $out/reading_events.pb.swift"
