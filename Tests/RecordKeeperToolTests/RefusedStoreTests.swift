import TestHelpers
import Foundation
import Testing

/// A file that is not a RecordKeeper store is refused by every command and left unchanged.
@Suite struct RefusedStoreTests {
    private static let commands: [[String]] = [
        ["collections"], ["list", "c"], ["get", "c", "k"], ["put", "c", "k", "1"], ["delete", "c", "k"],
        ["apply", "c", "CHANGES"], ["export"], ["import", "IMPORT"], ["import", "IMPORT", "--replace"],
        ["import", "IMPORT", "--dry-run"], ["check"], ["info"], ["conflicts"], ["resolve", "c", "k", "--keep", "server"],
        ["sync", "--server", "host=127.0.0.1 port=1 connect_timeout=2", "--space", "s", "--collections", "c"],
    ]

    @Test(arguments: commands)
    func `a file that is not a database is refused with exit 69 and left byte for byte`(arguments: [String]) async throws {
        try await withTool { tool in
            let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            try garbage.write(to: URL(fileURLWithPath: tool.storePath))
            let changes = try tool.file("changes.json", #"{"upserts": {"k": 1}}"#)
            let input = try tool.file("import.ndjson", #"{"collection":"c","key":"k","value":1}"# + "\n")
            let resolved = arguments.map { $0 == "CHANGES" ? changes : $0 == "IMPORT" ? input : $0 }
            let before = try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).sorted()

            let result = try await tool.runOnStore(resolved)

            #expect(result.status == 69)
            #expect(result.stderr.hasPrefix("recordkeeper: "))
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(result.stdout.isEmpty)
            #expect(try Data(contentsOf: URL(fileURLWithPath: tool.storePath)) == garbage)
            #expect(try FileManager.default.contentsOfDirectory(atPath: tool.directory.path).sorted() == before)
        }
    }

    /// The `sqlite3` shell, when installed, to build another application's database.
    private static let sqliteShell: String? = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/opt/homebrew/bin/sqlite3"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: sqliteShell != nil, "needs the sqlite3 shell"))
    func `another application's SQLite database is refused and left unchanged`() async throws {
        try await withTool { tool in
            let shell = try await ChildProcess.run(
                URL(fileURLWithPath: try #require(Self.sqliteShell)),
                [tool.storePath, "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('x');"], in: tool.directory)
            try #require(shell.status == 0, "\(shell.stderr)")
            let original = try Data(contentsOf: URL(fileURLWithPath: tool.storePath))
            for arguments in [["collections"], ["put", "c", "k", "1"], ["import", "-"]] {
                let result = try await tool.runOnStore(arguments, input: Data("{}".utf8))
                #expect(result.status == 69, "\(arguments): \(result.stderr)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: tool.storePath)) == original)
            }
        }
    }
}
