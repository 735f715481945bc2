import TestHelpers
import Foundation
import Testing
import RecordKeeper

/// Store files readable by their owner only, directories the library creates private, SQL
/// only with bound parameters, and a command-line tool that never echoes payloads.
@Suite struct SecurityTests {
    // MARK: File modes

    @Test func `store files are 0600 and the directories the library creates are 0700`() async throws {
        try await withTemporaryDirectory { directory in
            let nested = directory.appendingPathComponent("created/by/library", isDirectory: true)
            let url = nested.appendingPathComponent("store.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "k", data: Data("secret"))
            for path in [url.path, url.path + "-wal", url.path + "-shm"] {
                #expect(FileManager.default.fileExists(atPath: path), "\(path) should exist while the store is open")
                let found = try mode(of: path)
                #expect(found == 0o600, "\(path) is \(String(found, radix: 8))")
            }
            for created in ["created", "created/by", "created/by/library"] {
                let found = try mode(of: directory.appendingPathComponent(created).path)
                #expect(found == 0o700, "\(created) is \(String(found, radix: 8))")
            }
            // The temporary directory itself existed already and is left as it was.
            await store.close()
        }
    }

    private func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return ((attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
    }

    // MARK: SQL built from values

    /// String literals that contain SQL and interpolate something. Each entry was reviewed:
    /// PRAGMA statements cannot take bound parameters, and both interpolate integers chosen
    /// by the library (the migration plan's version and the application id; the test-only
    /// page limit), never input. The queries of issue 23 (`Sources/RecordKeeper/Queries/`) build
    /// their SQL and their index DDL (which takes no parameters) from three things only: SQL text
    /// of the library, JSON paths of validated `FieldPath` segments (ASCII letters, digits, `_`;
    /// no quote can appear) and the collection's integer id; index names are that id and the
    /// hex digits of the path. Every value a caller gives is bound. Any other interpolated SQL
    /// fails this test.
    static let reviewedInterpolations: Set<SQLLiteral> = [
        SQLLiteral(
            file: "Sources/RecordKeeper/Core/SQLiteConnection+Pragmas.swift",
            text: #"PRAGMA user_version = \(version); PRAGMA application_id = \(applicationID)"#),
        SQLLiteral(
            file: "Sources/RecordKeeper/Core/SQLiteConnection+Pragmas.swift",
            text: #"PRAGMA max_page_count = \(pages)"#),
        SQLLiteral(
            file: "Sources/RecordKeeper/Queries/QuerySQL.swift",
            text: #"SELECT key, payload, version\(sortColumns)"#),
        // `contains`: the validated JSON path twice, and the element's match, which is library
        // text around a bound placeholder (`?N`).
        SQLLiteral(
            file: "Sources/RecordKeeper/Queries/QuerySQL.swift",
            text: #"(json_type(CAST(payload AS TEXT), '\(path)') = 'array' AND EXISTS (SELECT 1 FROM json_each(CAST(payload AS TEXT), '\(path)') AS element WHERE \(match)))"#),
        SQLLiteral(
            file: "Sources/RecordKeeper/Queries/DeclaredIndex.swift",
            text: #"CREATE INDEX IF NOT EXISTS \"\(name)\" ON records (collection_id, \(field.sqlExpression)) WHERE collection_id = \(collectionID)"#),
        SQLLiteral(
            file: "Sources/RecordKeeper/Queries/DeclaredIndex.swift",
            text: #"DROP INDEX IF EXISTS \"\(name)\""#),
        // The benchmark's raw SQLite side of Q1/Q2 mirrors the library's declared indexes: a
        // partial index is usable only when the query names the same collection id literally
        // (a bound one cannot be matched), so the id (an Int64) and the field (a StaticString
        // the benchmark defines) are written into the SQL, as in DeclaredIndex.swift.
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"SELECT key, payload, \(expression) FROM records INDEXED BY \"raw_\(field)\""#),
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"SELECT count(*) FROM records INDEXED BY \"raw_\(field)\""#),
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"CREATE INDEX IF NOT EXISTS \"raw_\(field)\" ON records (collection_id, \(Self.fieldExpression(field)))"#),
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"WHERE collection_id = \(collectionID) AND \(Self.fieldExpression(field)) BETWEEN ?1 AND ?2"#),
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"WHERE collection_id = \(collectionID)"#),
        SQLLiteral(
            file: "Sources/recordkeeper-bench/RawSQLite.swift",
            text: #"WHERE collection_id = \(collectionID) ORDER BY \(expression) DESC, key DESC LIMIT ?1"#),
    ]

    @Test func `no SQL in the sources is built by interpolating values, apart from reviewed pragmas and validated query paths`() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var scanned = 0
        var found: [SQLLiteral: Int] = [:]
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let relative = "Sources/" + url.resolvingSymlinksInPath().path.components(separatedBy: "/Sources/").last!
            let text = try String(contentsOf: url, encoding: .utf8)
            scanned += 1
            for literal in SQLScanner.interpolatedSQL(in: text) {
                found[SQLLiteral(file: relative, text: literal.text), default: 0] += 1
            }
        }
        #expect(scanned > 20, "the scan found only \(scanned) Swift files under \(sources.path)")
        let unreviewed = found.keys.filter { !Self.reviewedInterpolations.contains($0) }
        #expect(unreviewed.isEmpty, "SQL built by string interpolation: \(unreviewed.map { "\($0.file): \($0.text)" })")
        for reviewed in Self.reviewedInterpolations {
            #expect(found[reviewed] == 1, "reviewed exception not found exactly once (remove it from the list if gone): \(reviewed.text)")
        }
        reportFigure("security: scanned \(scanned) source files, \(found.count) interpolated SQL literals, all reviewed")
    }

    @Test func `the SQL scanner finds interpolated SQL and ignores comments and plain messages`() {
        let source = ##"""
            // "SELECT * FROM t WHERE k = \(key)" in a comment is fine
            /* "DELETE FROM t WHERE k = \(key)" */
            let a = "SELECT payload FROM records WHERE key = \(key)"
            let b = "could not create the directory \(path)"
            let c = "SELECT payload FROM records WHERE key = ?1"
            let d = """
                INSERT INTO records (key) VALUES ('\(name.replacingOccurrences(of: "'", with: "''"))')
                """
            let e = "the value is \(f("WHERE")) here"
            let g = #"UPDATE t SET v = \#(value)"#
            """##
        let found = SQLScanner.interpolatedSQL(in: source).map(\.text)
        #expect(found.count == 3, "\(found)")
        #expect(found.contains { $0.hasPrefix("SELECT payload FROM records WHERE key = \\(key)") })
        #expect(found.contains { $0.contains("INSERT INTO records") })
        #expect(found.contains { $0.hasPrefix("UPDATE t SET v") })
    }

    // MARK: The command-line tool

    static let secret = "Zq7-PAYLOAD-SECRET-b81"

    @Test(.enabled(if: BuildProducts.tool != nil, "the recordkeeper binary is not in the build products; its payload check is skipped"))
    func `the command-line tool never echoes a payload into its errors`() async throws {
        let tool = try #require(BuildProducts.tool)
        let secret = Self.secret
        try await withTemporaryDirectory { directory in
            let store = directory.appendingPathComponent("store.sqlite").path
            let junk = directory.appendingPathComponent("junk.sqlite")
            try Data("this is not a database, it is plain text of some length".utf8).write(to: junk)
            let cases: [(String, [String], Data?)] = [
                ("empty collection", ["--store", store, "put", "", "k", secret], nil),
                ("empty key", ["--store", store, "put", "c", "", secret], nil),
                ("invalid JSON value", ["--store", store, "put", "--json", "c", "k", "{\"a\": \"\(secret)"], nil),
                ("invalid base64 value", ["--store", store, "put", "--base64", "c", "k", "!!\(secret)!!"], nil),
                ("not a database", ["--store", junk.path, "put", "c", "k", secret], nil),
                ("not a database, stdin", ["--store", junk.path, "put", "c", "k", "-"], Data(secret.utf8)),
                ("malformed change set", ["--store", store, "apply", "c", "-"], Data("{\"upserts\": {\"k\": \"\(secret)\" ".utf8)),
                ("change set with a bad value", ["--store", store, "apply", "c", "-"], Data("{\"upserts\": {\"k\": {\"$base64\": \"\(secret)\"}}}".utf8)),
                ("malformed import", ["--store", store, "import", "-"], Data("{\"c\": {\"k\": \"\(secret)\", }".utf8)),
                ("malformed NDJSON import", ["--store", store, "import", "-"], Data("{\"collection\": \"c\", \"key\": \"k\", \"value\": \"\(secret)\"\n{oops \(secret)\n".utf8)),
            ]
            var checked = 0
            for (name, arguments, input) in cases {
                let child = try ChildProcess(executable: tool, arguments: arguments, in: directory, input: input)
                try child.start()
                await child.waitForExit()
                let output = try child.output()
                let errors = try child.errorOutput()
                try child.removeFiles()
                #expect(child.process.terminationStatus != 0, "\(name): expected a failure, got \(output)")
                #expect(!errors.isEmpty, "\(name): no error message")
                for fragment in [secret, String(secret.prefix(10)), String(secret.suffix(10))] {
                    #expect(!errors.contains(fragment), "\(name): the payload appears in the error: \(errors)")
                    #expect(!output.contains(fragment), "\(name): the payload appears in the output: \(output)")
                }
                checked += 1
            }
            reportFigure("security: \(checked) failing CLI invocations with a payload, none echoed it")
        }
    }
}

/// One string literal of a source file, by its raw text.
struct SQLLiteral: Hashable, Sendable {
    let file: String
    let text: String
}

/// Finds string literals that hold SQL and interpolate a value, by reading Swift's lexical
/// structure roughly: comments are skipped, `"…"`, `"""…"""` and raw `#"…"#` literals are
/// collected with nested interpolations, and a literal counts when it has both an
/// interpolation and an upper-case SQL keyword outside of it.
enum SQLScanner {
    struct Found {
        let text: String
    }

    static var keywords: some RegexComponent {
        #/\b(SELECT|INSERT|UPDATE|DELETE|REPLACE|UPSERT|CREATE|DROP|ALTER|PRAGMA|ATTACH|DETACH|VACUUM|WHERE|VALUES|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/#
    }

    static func interpolatedSQL(in source: String) -> [Found] {
        literals(in: Array(source.unicodeScalars)).compactMap { literal in
            guard literal.interpolates, literal.outside.contains(keywords) else { return nil }
            return Found(text: literal.raw.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    private struct Literal {
        var raw = ""
        /// The literal's text without its interpolations.
        var outside = ""
        var interpolates = false
    }

    private static func literals(in scalars: [Unicode.Scalar]) -> [Literal] {
        var result: [Literal] = []
        var index = 0
        while index < scalars.count {
            if starts(scalars, index, "//") {
                while index < scalars.count, scalars[index] != "\n" { index += 1 }
            } else if starts(scalars, index, "/*") {
                index += 2
                while index < scalars.count, !starts(scalars, index, "*/") { index += 1 }
                index += 2
            } else if scalars[index] == "#" || scalars[index] == "\"" {
                var hashes = 0
                var cursor = index
                while cursor < scalars.count, scalars[cursor] == "#" {
                    hashes += 1
                    cursor += 1
                }
                guard cursor < scalars.count, scalars[cursor] == "\"" else {
                    index = cursor + 1
                    continue
                }
                index = readLiteral(scalars, from: cursor, hashes: hashes, into: &result)
            } else {
                index += 1
            }
        }
        return result
    }

    /// Reads the literal whose opening quote is at `start` into `found` (after any literals
    /// nested in its interpolations); returns the index after its closing quote.
    private static func readLiteral(
        _ scalars: [Unicode.Scalar], from start: Int, hashes: Int, into found: inout [Literal]
    ) -> Int {
        let multiline = starts(scalars, start, "\"\"\"")
        let quote = multiline ? "\"\"\"" : "\""
        let closing = quote + String(repeating: "#", count: hashes)
        let escape = "\\" + String(repeating: "#", count: hashes)
        var literal = Literal()
        var index = start + quote.unicodeScalars.count
        defer { found.append(literal) }
        while index < scalars.count {
            if starts(scalars, index, closing) { return index + closing.unicodeScalars.count }
            if !multiline, scalars[index] == "\n" { return index }
            guard starts(scalars, index, escape) else {
                literal.raw.unicodeScalars.append(scalars[index])
                literal.outside.unicodeScalars.append(scalars[index])
                index += 1
                continue
            }
            literal.raw += escape
            index += escape.unicodeScalars.count
            guard index < scalars.count else { break }
            if scalars[index] != "(" {
                // Any other escape (\n, \", \\): kept as written.
                literal.outside += escape
                literal.raw.unicodeScalars.append(scalars[index])
                literal.outside.unicodeScalars.append(scalars[index])
                index += 1
                continue
            }
            // An interpolation: up to the matching parenthesis, reading nested literals whole.
            literal.interpolates = true
            literal.outside += " "
            var depth = 0
            repeat {
                if scalars[index] == "\"" {
                    let end = readLiteral(scalars, from: index, hashes: 0, into: &found)
                    literal.raw += String(String.UnicodeScalarView(scalars[index..<end]))
                    index = end
                    continue
                }
                if scalars[index] == "(" { depth += 1 }
                if scalars[index] == ")" { depth -= 1 }
                literal.raw.unicodeScalars.append(scalars[index])
                index += 1
            } while index < scalars.count && depth > 0
        }
        return index
    }

    private static func starts(_ scalars: [Unicode.Scalar], _ index: Int, _ text: String) -> Bool {
        var cursor = index
        for scalar in text.unicodeScalars {
            guard cursor < scalars.count, scalars[cursor] == scalar else { return false }
            cursor += 1
        }
        return true
    }
}
