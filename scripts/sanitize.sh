#!/usr/bin/env bash
# Runs the test suite under ThreadSanitizer, in its own build directory so it never
# disturbs the ordinary build. Extra arguments go to `swift test` (e.g. --filter Crash).
#
#   scripts/sanitize.sh                      # everything
#   RECORDKEEPER_TSAN_SCRATCH=/tmp/rk-tsan scripts/sanitize.sh --filter RecordKeeperReliabilityTests
#
# Any ThreadSanitizer report stops the run with a failure (halt_on_error=1). The helper
# processes of the reliability tests are built with the sanitizer too.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

scratch="${RECORDKEEPER_TSAN_SCRATCH:-.build/tsan}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}"
# Tests that cannot run under the sanitizer's runtime (see TestHelpers'
# `underThreadSanitizer`) skip themselves, saying why.
export RECORDKEEPER_SANITIZER=thread

swift build --build-tests --sanitize=thread --scratch-path "$scratch"
swift test --skip-build --sanitize=thread --scratch-path "$scratch" "$@"
