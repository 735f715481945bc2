#!/usr/bin/env bash
# Compiles every ```swift snippet of README.md, docs/*.md and the DocC catalogs
# (Sources/*/*.docc/*.md), so the documentation cannot teach code that does not build.
#
# scripts/snippets/extract.py writes a throwaway package (.build/snippets/package) that depends
# on this one by path, one module per snippet, and the prelude scripts/snippets/Context.swift;
# one `swift build` compiles them all (incrementally: its build directory is kept). Errors point
# at the documentation's own file and line. Markers that skip a fragment or give a snippet
# context are described in extract.py; the skipped ones are listed on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
package="$root/.build/snippets/package"
mkdir -p "$package"
python3 scripts/snippets/extract.py "$root" "$package"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
build() {
    swift build --package-path "$package" --scratch-path "$root/.build/snippets/build" "$@"
}
if ! build >"$log" 2>&1; then
    # The build stops at the first module that fails: build each snippet on its own to list
    # every failure (the library is built by now, so each is quick).
    for target in $(sed -n 's/.*\.target(name: "\(Snippet_[^"]*\)".*/\1/p' "$package/Package.swift"); do
        build --target "$target" >>"$log" 2>&1 || true
    done
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" | grep -v "^$package" >&2 || true
    echo "snippets: these do not compile:" >&2
    grep -E "^$root/(README\.md|docs/|Sources/).*: error: " "$log" | sed "s|^$root/||" | sort -u >&2 || true
    exit 1
fi
echo "snippets: every compiled snippet builds"
