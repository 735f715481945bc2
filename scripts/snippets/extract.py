#!/usr/bin/env python3
"""Extracts every ```swift block of the documentation into a throwaway Swift package.

Usage: extract.py REPO_ROOT PACKAGE_DIR

Reads README.md, docs/*.md and Sources/*/*.docc/*.md of REPO_ROOT and writes PACKAGE_DIR: a
package that depends on REPO_ROOT by path, with one library target per snippet (so snippets
that declare the same names cannot collide), plus `SnippetContext`, the small prelude of
names the snippets assume (scripts/snippets/Context.swift). It prints what it skipped.

How a snippet becomes Swift:
- Its top-level declarations (types, extensions, protocols, functions) stay at file scope;
  everything else becomes the body of `@MainActor func snippet() async throws`, as if the
  code ran inside an app's async function. `#sourceLocation` maps errors back to the doc.
- A snippet with `import` lines gets exactly those imports (and SnippetContext): the imports it
  shows must be enough. A snippet without any gets `Foundation` and `RecordKeeper` (and
  `RecordKeeperFeatures` in that module's DocC catalog), as a continuation of the page.

Markers, in HTML comments on the lines right before the fence (DocC and GitHub hide them):
- `<!-- snippet: skip (reason) -->`: not compiled (a Package.swift excerpt, a listing of a
  signature); the reason is printed.
- `<!-- snippet: context DECLARATIONS -->`: Swift placed before the snippet's statements, for
  names the page assumes (`let order: Order = placeholder()`); may span lines.
- `<!-- snippet: continues -->`: compiled in the same module as the previous snippet of the
  file, so it may use that snippet's declarations.
"""

import os
import re
import sys
from pathlib import Path

DECLARATION = re.compile(
    r"^(@\w+(\([^)]*\))?\s+)*"
    r"((public|private|fileprivate|internal|package|final|nonisolated|indirect|open)\s+)*"
    r"(struct|class|enum|protocol|extension|actor|func|typealias)\b"
)
ATTRIBUTES_ONLY = re.compile(r"^(@\w+(\([^)]*\))?\s*)+$")
MARKER = re.compile(r"<!--\s*snippet:\s*(skip|context|continues)\b(.*?)-->", re.S)


class Snippet:
    def __init__(self, path, line, code, markers):
        self.path = path          # relative to the repository
        self.line = line          # line of the first code line, 1-based
        self.code = code
        self.skip = None
        self.context = []
        self.continues = False
        for kind, rest in markers:
            rest = rest.strip()
            if kind == "skip":
                self.skip = rest.strip("()") or "no reason given"
            elif kind == "context":
                self.context.append(rest)
            else:
                self.continues = True


def documents(root):
    paths = [root / "README.md"]
    paths += sorted((root / "docs").glob("*.md"))
    paths += sorted(root.glob("Sources/*/*.docc/*.md"))
    return [p for p in paths if p.is_file()]


def snippets_in(root, path):
    lines = path.read_text(encoding="utf-8").split("\n")
    result = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```swift\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent = len(fence.group(1))
        # Markers: the HTML comments ending right above the fence (blank lines allowed).
        j = i - 1
        while j >= 0 and lines[j].strip() == "":
            j -= 1
        above = []
        while j >= 0 and lines[j].strip().endswith("-->"):
            start = j
            while start >= 0 and "<!--" not in lines[start]:
                start -= 1
            if start < 0:
                break
            above.insert(0, "\n".join(lines[start:j + 1]))
            j = start - 1
            while j >= 0 and lines[j].strip() == "":
                j -= 1
        markers = [(m.group(1), m.group(2)) for text in above for m in MARKER.finditer(text)]
        body = []
        k = i + 1
        while k < len(lines) and not re.match(r"^\s*```\s*$", lines[k]):
            body.append(lines[k][indent:] if lines[k][:indent].strip() == "" else lines[k].lstrip())
            k += 1
        result.append(Snippet(str(path.relative_to(root)), i + 2, "\n".join(body), markers))
        i = k + 1
    return result


def depth_change(line, state):
    """The change of bracket depth ({, (, [) over `line`, skipping strings and comments. `state` carries
    an open block comment or multi-line string into the next line."""
    delta = 0
    i = 0
    n = len(line)
    while i < n:
        if state.get("block"):
            end = line.find("*/", i)
            if end < 0:
                return delta
            state["block"] = False
            i = end + 2
            continue
        if state.get("multiline") is not None:
            end = line.find(state["multiline"], i)
            if end < 0:
                return delta
            i = end + len(state["multiline"])
            state["multiline"] = None
            continue
        c = line[i]
        if line.startswith("//", i):
            return delta
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if c == "#" or c == '"':
            hashes = len(line[i:]) - len(line[i:].lstrip("#"))
            j = i + hashes
            if j < n and line[j] == '"':
                if line.startswith('"""', j):
                    state["multiline"] = '"""' + "#" * hashes
                    i = j + 3
                    continue
                close = '"' + "#" * hashes
                j += 1
                while j < n:
                    if hashes == 0 and line[j] == "\\":
                        j += 2
                        continue
                    if line.startswith(close, j):
                        break
                    j += 1
                i = j + len(close)
                continue
        if c in "{([":
            delta += 1
        elif c in "})]":
            delta -= 1
        i += 1
    return delta


def split(code):
    """Top-level declarations and the rest, each as a list of (first line offset, lines)."""
    declarations, statements = [], []
    lines = code.split("\n")
    state = {}
    depth = 0
    pending = []          # comment and attribute lines waiting for what follows them
    pending_start = 0
    current = None        # (target list, start offset, lines) of the item being read
    for offset, line in enumerate(lines):
        stripped = line.strip()
        if current is None and depth == 0 and not state.get("block") and state.get("multiline") is None:
            if stripped.startswith("//") or ATTRIBUTES_ONLY.match(stripped or "x"):
                if not pending:
                    pending_start = offset
                pending.append(line)
                continue
            target = declarations if DECLARATION.match(stripped) else statements
            start = pending_start if pending else offset
            current = (target, start, pending + [line])
            pending = []
        elif current is not None:
            current[2].append(line)
        else:  # inside a comment or string that began at the top level
            statements.append((offset, [line]))
        depth += depth_change(line, state)
        if current and depth == 0 and not state.get("block") and state.get("multiline") is None:
            current[0].append((current[1], current[2]))
            current = None
    if current:
        current[0].append((current[1], current[2]))
    if pending:
        statements.append((pending_start, pending))
    return merged(declarations), merged(statements)


def merged(items):
    """Items whose lines follow each other as one chunk: one `#sourceLocation` each."""
    result = []
    for start, lines in sorted(items, key=lambda item: item[0]):
        if result and result[-1][0] + len(result[-1][1]) == start:
            result[-1][1].extend(lines)
        else:
            result.append((start, list(lines)))
    return result


def imports_of(code):
    return [line.strip() for line in code.split("\n") if re.match(r"^\s*(@\w+\s+)?import\s+\w+", line)]


def without_imports(code):
    return "\n".join("" if re.match(r"^\s*(@\w+\s+)?import\s+\w+", line) else line for line in code.split("\n"))


def location(path, line):
    return f'#sourceLocation(file: "{path}", line: {line})'


def module_source(members):
    """The Swift file of one module: its snippets (the first one and any continuations)."""
    imports = []
    for snippet in members:
        imports += imports_of(snippet.code)
    if not imports:
        imports = ["import Foundation", "import RecordKeeper"]
        if "RecordKeeperFeatures.docc" in members[0].path:
            imports.append("import RecordKeeperFeatures")
    imports.append("import SnippetContext")
    out = ["// Generated by scripts/snippets/extract.py from the documentation; do not edit."]
    out += sorted(set(imports), key=imports.index)
    for number, snippet in enumerate(members):
        root = os.environ.get("SNIPPETS_REPO_ROOT", "")
        doc = str(Path(root) / snippet.path) if root else snippet.path
        declarations, statements = split(without_imports(snippet.code))
        out.append("")
        for offset, lines in declarations:
            out.append(location(doc, snippet.line + offset))
            out += lines
        if declarations:
            out.append("#sourceLocation()")
        out.append(f"@MainActor func snippet{number}() async throws {{")
        for context in snippet.context:
            out.append(location(doc, snippet.line - 2))
            out.append(context)
        for offset, lines in statements:
            out.append(location(doc, snippet.line + offset))
            out += lines
        if statements or snippet.context:
            out.append("#sourceLocation()")
        out.append("}")
    return "\n".join(out) + "\n"


def main():
    root = Path(sys.argv[1]).resolve()
    package = Path(sys.argv[2])
    os.environ["SNIPPETS_REPO_ROOT"] = str(root)
    modules = []          # lists of snippets
    skipped = []
    total = 0
    for path in documents(root):
        previous = None
        for snippet in snippets_in(root, path):
            total += 1
            if snippet.skip:
                skipped.append(snippet)
                continue
            if snippet.continues and previous is not None:
                previous.append(snippet)
            else:
                previous = [snippet]
                modules.append(previous)
    sources = package / "Sources"
    if sources.exists():
        for old in sorted(sources.rglob("*"), reverse=True):
            old.unlink() if old.is_file() else old.rmdir()
    names = []
    for members in modules:
        first = members[0]
        stem = re.sub(r"[^A-Za-z0-9]", "_", first.path.replace(".md", ""))
        name = f"Snippet_{stem}_{first.line}"
        names.append(name)
        directory = sources / name
        directory.mkdir(parents=True)
        (directory / "Snippet.swift").write_text(module_source(members), encoding="utf-8")
    context = sources / "SnippetContext"
    context.mkdir(parents=True)
    (context / "Context.swift").write_text(
        (root / "scripts/snippets/Context.swift").read_text(encoding="utf-8"), encoding="utf-8")
    identity = root.name
    products = ", ".join(
        f'.product(name: "{p}", package: "{identity}")'
        for p in ["RecordKeeper", "RecordKeeperCoding", "RecordKeeperSync", "RecordKeeperFeatures", "RecordKeeperTestSupport", "RecordKeeperPostgres"])
    targets = [f'        .target(name: "SnippetContext", dependencies: [{products}]),']
    for name in names:
        targets.append(f'        .target(name: "{name}", dependencies: ["SnippetContext", {products}]),')
    (package / "Package.swift").write_text(
        "// swift-tools-version: 6.2\n"
        "// Generated by scripts/snippets/extract.py: every Swift snippet of the documentation.\n"
        "import PackageDescription\n\n"
        "let package = Package(\n"
        '    name: "Snippets",\n'
        "    platforms: [.macOS(.v14), .iOS(.v17)],\n"
        f'    dependencies: [.package(path: "{root}")],\n'
        "    targets: [\n" + "\n".join(targets) + "\n    ]\n)\n",
        encoding="utf-8")
    print(f"snippets: {total} in the documentation, {total - len(skipped)} compiled "
          f"(in {len(modules)} modules), {len(skipped)} skipped:")
    for snippet in skipped:
        print(f"  skipped {snippet.path}:{snippet.line}: {snippet.skip}")


if __name__ == "__main__":
    main()
