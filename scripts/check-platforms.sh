#!/usr/bin/env bash
# Fails on source patterns that build or behave only on Linux, or that would not suit Apple
# platforms, where the package claims to build (see README "Installation" and
# .github/workflows/apple.yml, which proves the Apple side on a macOS runner):
#
#   1. `import Glibc` (or Musl) outside an `#if canImport(Glibc)` / `#if os(Linux)` branch;
#   2. a "/proc" path outside an `#if os(Linux)` branch (Apple platforms have no /proc);
#   3. a fixed-rate timer in the device-side library (RecordKeeperCoding, RecordKeeperSync,
#      RecordKeeper, RecordKeeperFeatures, LearnerKit): `schedule(... repeating: <anything but .never>)`, `Timer.scheduledTimer`,
#      `Timer(timeInterval:...)`, `Timer.publish`: waking at a fixed rate drains a phone's
#      battery (the change watcher's poll is a one-shot timer that backs off);
#   4. `st_dev` / `st_ino` converted with a plain integer initializer (`UInt64(info.st_dev)`):
#      `dev_t` is a signed 32-bit integer on Darwin and traps there when negative; use
#      `StoreFileIdentity(stat)` or `UInt64(truncatingIfNeeded:)`;
#   5. `fsync(` in Sources outside `FileSync.swift`: the library's own syncs go through
#      `FileSync.synchronize`, which uses F_FULLFSYNC on Darwin.
#
# Comments are ignored. Usage: scripts/check-platforms.sh [ROOT]   (default: the repository)
#        scripts/check-platforms.sh --self-test   (plants each pattern once and expects a
#                                                  failure for each, and none for a clean file)
set -euo pipefail

check() {
python3 - "$1" <<'PY'
import os, re, sys

root = sys.argv[1]
library = ("Sources/RecordKeeper/", "Sources/RecordKeeperCoding/", "Sources/RecordKeeperSync/",
           "Sources/RecordKeeperFeatures/", "Sources/LearnerKit/")
problems = []

def strip_comment(line):
    # Drops a // comment that is not inside a string literal (good enough for these checks).
    out, in_string, i = [], False, 0
    while i < len(line):
        c = line[i]
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        if not in_string and line.startswith("//", i):
            break
        out.append(c)
        i += 1
    return "".join(out)

timer_patterns = [
    (re.compile(r"\bschedule\s*\(.*\brepeating\s*:\s*(?!\.never\b)"), "a repeating timer"),
    (re.compile(r"\bTimer\.scheduledTimer\b"), "Timer.scheduledTimer"),
    (re.compile(r"\bTimer\s*\(\s*timeInterval\s*:"), "Timer(timeInterval:)"),
    (re.compile(r"\bTimer\.publish\b"), "Timer.publish"),
]
stat_conversion = re.compile(r"\b(?:U?Int(?:64|32)?)\s*\(\s*[A-Za-z_][\w.]*\bst_(?:dev|ino)\b")

for directory in ("Sources", "Tests"):
    for base, _, files in os.walk(os.path.join(root, directory)):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(base, name)
            relative = os.path.relpath(path, root)
            stack = []          # one entry per open #if: the condition of the branch we are in
            in_block_comment = False
            with open(path, encoding="utf-8") as handle:
                for number, raw in enumerate(handle, 1):
                    line = raw
                    if in_block_comment:
                        if "*/" not in line:
                            continue
                        line = line.split("*/", 1)[1]
                        in_block_comment = False
                    while "/*" in line and not line.strip().startswith("//"):
                        head, rest = line.split("/*", 1)
                        if "*/" in rest:
                            line = head + rest.split("*/", 1)[1]
                        else:
                            line = head
                            in_block_comment = True
                    code = strip_comment(line).strip()
                    directive = re.match(r"#(if|elseif|else|endif)\b\s*(.*)", code)
                    if directive:
                        kind, condition = directive.groups()
                        if kind == "if":
                            stack.append(condition)
                        elif kind == "elseif" and stack:
                            stack[-1] = condition
                        elif kind == "else" and stack:
                            stack[-1] = "!(" + stack[-1] + ")"
                        elif kind == "endif" and stack:
                            stack.pop()
                        continue
                    def within(*tokens):
                        # A branch guards when its condition requires one of `tokens`: it names
                        # one, not negated, and has no `||` (which could let another platform in).
                        def requires(condition):
                            if condition.startswith("!(") or "||" in condition:
                                return False
                            return any(re.search(r"(?<![!\w])" + re.escape(t), condition) for t in tokens)
                        return any(requires(c) for c in stack)
                    where = f"{relative}:{number}"
                    if re.match(r"import\s+(Glibc|Musl)\b", code):
                        module = code.split()[1]
                        if not within(f"canImport({module})", "os(Linux)"):
                            problems.append(f"{where}: import {module} outside #if canImport({module}) / #if os(Linux)")
                    if '"/proc' in code and not within("os(Linux)"):
                        problems.append(f"{where}: /proc outside #if os(Linux)")
                    if relative.startswith(library):
                        for pattern, what in timer_patterns:
                            if pattern.search(code):
                                problems.append(f"{where}: {what} in the library (wake-ups at a fixed rate)")
                    if stat_conversion.search(code):
                        problems.append(f"{where}: st_dev/st_ino converted with a plain integer initializer "
                                        "(dev_t is Int32 on Darwin): use StoreFileIdentity(stat) or UInt64(truncatingIfNeeded:)")
                    if (relative.startswith("Sources/") and not relative.endswith("/FileSync.swift")
                            and re.search(r"(?<![\w.])fsync\s*\(", code)):
                        problems.append(f"{where}: fsync outside FileSync.swift (use FileSync.synchronize: F_FULLFSYNC on Darwin)")

for problem in problems:
    print(problem, file=sys.stderr)
if problems:
    print(f"check-platforms: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print("check-platforms: ok")
PY
}

self_test() {
    local scratch failures=0
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' RETURN
    mkdir -p "$scratch/Sources/RecordKeeper" "$scratch/Tests/T"
    # A clean file: every pattern, guarded or spelled the safe way, must pass.
    cat > "$scratch/Sources/RecordKeeper/Clean.swift" <<'SWIFT'
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
#if os(Linux)
    let status = "/proc/self/status"
#endif
// A comment may say "/proc" and UInt64(info.st_dev) and fsync(descriptor).
let buffer = [UInt8](repeating: 0, count: 4)
func identity(_ info: stat) -> UInt64 { UInt64(truncatingIfNeeded: info.st_dev) }
func arm(_ timer: any DispatchSourceTimer) { timer.schedule(deadline: .now() + .seconds(1), leeway: .milliseconds(1)) }
SWIFT
    if ! check "$scratch" >/dev/null 2>&1; then
        echo "self-test: the clean file was refused:" >&2
        check "$scratch" || true
        failures=$((failures + 1))
    fi
    local planted=(
        "Sources/RecordKeeper/Planted.swift|import Glibc"
        "Sources/RecordKeeper/Planted.swift|#if canImport(Darwin)
#else
import Glibc
#endif"
        "Tests/T/Planted.swift|let path = \"/proc/self/fd\""
        "Tests/T/Planted.swift|#if !os(Linux)
let path = \"/proc/self/fd\"
#endif"
        "Tests/T/Planted.swift|#if os(macOS) || os(Linux)
let path = \"/proc/self/fd\"
#endif"
        "Sources/RecordKeeper/Planted.swift|func f(_ t: any DispatchSourceTimer) { t.schedule(deadline: .now(), repeating: .milliseconds(5)) }"
        "Sources/RecordKeeper/Planted.swift|let t = Timer.scheduledTimer(withTimeInterval: 1, repeats: true) { _ in }"
        "Sources/RecordKeeper/Planted.swift|func d(_ info: stat) -> UInt64 { UInt64(info.st_dev) }"
        "Tests/T/Planted.swift|func i(_ info: stat) -> UInt64 { UInt64(info.st_ino) }"
        "Sources/RecordKeeper/Planted.swift|func s(_ d: Int32) -> Bool { fsync(d) == 0 }"
    )
    local entry file text
    for entry in "${planted[@]}"; do
        file=${entry%%|*}
        text=${entry#*|}
        printf '%s\n' "$text" > "$scratch/$file"
        if check "$scratch" >/dev/null 2>&1; then
            echo "self-test: not caught: $text" >&2
            failures=$((failures + 1))
        fi
        rm "$scratch/$file"
    done
    if [ "$failures" -gt 0 ]; then
        echo "check-platforms self-test: $failures failure(s)" >&2
        return 1
    fi
    echo "check-platforms self-test: ok (${#planted[@]} planted patterns caught, the clean file passed)"
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
else
    check "${1:-$(cd "$(dirname "$0")/.." && pwd)}"
fi
