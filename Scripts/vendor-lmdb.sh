#!/usr/bin/env bash
# Re-vendors LMDB's C sources into Sources/CLMDBVendored, reproducibly: Debian's source package of
# LMDB (the same version as bookworm's liblmdb-dev, so the vendored build and the system build run
# the same LMDB), checked against its SHA-256 from Debian's .dsc, then the patches in
# Scripts/lmdb-patches applied in order. Run from anywhere; needs curl, tar, sha256sum, patch.
#   Scripts/vendor-lmdb.sh          # writes Sources/CLMDBVendored (its C files, header, licence)
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.9.24
sha256=8e7200fdc9bb09b0cfad1d4eee8b20d539e43fe05c7ef9406247d64659c4a480
url="http://deb.debian.org/debian/pool/main/l/lmdb/lmdb_${version}.orig.tar.gz"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL -o "$work/lmdb.tar.gz" "$url"
echo "$sha256  $work/lmdb.tar.gz" | sha256sum -c --quiet -
tar -xzf "$work/lmdb.tar.gz" -C "$work"
src="$work/lmdb-${version}/libraries/liblmdb"

stage="$work/stage"
mkdir -p "$stage"
cp "$src/mdb.c" "$src/midl.c" "$src/midl.h" "$src/lmdb.h" "$src/LICENSE" "$src/COPYRIGHT" "$stage/"
for p in Scripts/lmdb-patches/*.patch; do
    patch -s -p1 -d "$stage" < "$p"
done

out=Sources/CLMDBVendored
rm -rf "$out"
mkdir -p "$out/include"
cp "$stage/mdb.c" "$stage/midl.c" "$stage/midl.h" "$stage/LICENSE" "$stage/COPYRIGHT" "$out/"
cp "$stage/lmdb.h" "$out/include/"
cat > "$out/VENDORED.md" <<INFO
# Vendored LMDB

LMDB ${version} (\`libraries/liblmdb\` of ${url},
SHA-256 ${sha256}), with the patches in \`Scripts/lmdb-patches\`. Written by
\`Scripts/vendor-lmdb.sh\`: do not edit these files; change a patch and run the script again.
Licence: \`LICENSE\` (the OpenLDAP Public License) and \`COPYRIGHT\`.
INFO
echo "vendored LMDB ${version} into ${out}"
