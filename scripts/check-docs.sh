#!/bin/bash
# Builds the DocC catalog of RecordKeeper as a combined documentation build would (the archives
# of RecordKeeperSync and RecordKeeperCoding as dependencies, so links to their symbols resolve)
# and fails on any warning, in the catalog's articles or in the sources' doc comments.
#
#   scripts/check-docs.sh        # after `swift build`
#
# Links to a symbol of the other two modules are written ``/RecordKeeperSync/Name`` (a leading
# slash); members that RecordKeeper adds to their types, ``RecordKeeperSync/Name/member``.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$(swift build --show-bin-path)
modules=$bin/Modules
[ -d "$modules" ] || modules=$bin
triple=$(swift -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/catalog"
extract() {  # module, output directory
    mkdir -p "$2"
    swift symbolgraph-extract -module-name "$1" -I "$modules" -I "$root/Sources/CSQLite" -target "$triple" \
        -output-dir "$2" -minimum-access-level public -emit-extension-block-symbols
}
for module in RecordKeeperSync RecordKeeperCoding; do
    extract "$module" "$work/graphs-$module"
    docc convert --additional-symbol-graph-dir "$work/graphs-$module" --output-path "$work/$module.doccarchive" \
        --fallback-display-name "$module" --fallback-bundle-identifier "$module" \
        --enable-experimental-external-link-support > "$work/$module.log" 2>&1
done
extract RecordKeeper "$work/graphs-RecordKeeper"
cp -r Sources/RecordKeeper/RecordKeeper.docc "$work/catalog/"
docc convert "$work/catalog/RecordKeeper.docc" --additional-symbol-graph-dir "$work/graphs-RecordKeeper" \
    --output-path "$work/RecordKeeper.doccarchive" --fallback-display-name RecordKeeper \
    --fallback-bundle-identifier RecordKeeper \
    --dependency "$work/RecordKeeperSync.doccarchive" --dependency "$work/RecordKeeperCoding.doccarchive" \
    --enable-experimental-external-link-support > "$work/RecordKeeper.log" 2>&1
warnings=$(grep -cE '^(warning|error):' "$work/RecordKeeper.log" || true)
if [ "$warnings" != 0 ]; then
    grep -A3 -E '^(warning|error):' "$work/RecordKeeper.log"
    echo "check-docs: $warnings DocC warnings" >&2
    exit 1
fi
echo "check-docs: the RecordKeeper catalog and doc comments build without warnings"
