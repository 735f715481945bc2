import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// The tool's reading commands, and `import --dry-run`, never change what is at the store path.
@Suite struct ReadingCommandsWriteNothingTests {
    enum Existing: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case missing, zeroBytes, emptyDatabaseRollbackJournal, emptyDatabaseWAL, store, foreignDatabase, newerFormatStore
        var testDescription: String { rawValue }
        var isEmptyDatabase: Bool { self == .emptyDatabaseRollbackJournal || self == .emptyDatabaseWAL }
    }

    @Test(arguments: Existing.allCases)
    func `reading commands and a dry-run import leave the file and its directory as they were`(file: Existing) async throws {
        try await withTemporaryDirectory { root in
            let data = root.appendingPathComponent("data", isDirectory: true)
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            let url = data.appendingPathComponent("store.sqlite")
            try await Self.make(file, at: url)
            let before = try Self.fingerprint(data)

            let tool = ToolRunner(directory: root)
            let input = try tool.file("in.ndjson", #"{"collection":"notes","key":"a","value":1}"# + "\n")
            let commands: [[String]] = [
                ["collections"], ["list", "notes"], ["get", "notes", "a"], ["export"], ["export", "notes"],
                ["check"], ["info"], ["import", input, "--dry-run"], ["import", input, "--replace", "--dry-run"],
                ["conflicts"], ["conflicts", "--json"],
            ]
            for command in commands {
                let result = try await tool.run(command + ["--store", url.path])
                #expect(try Self.fingerprint(data) == before, "\(command.joined(separator: " ")) changed \(data.path)")
                if file.isEmptyDatabase, command == ["collections"] {
                    #expect(result.status == 0)
                    #expect(result.output.isEmpty)
                }
                if file.isEmptyDatabase, command.last == "--dry-run" {
                    #expect(result.status == 0)
                    #expect(result.output.contains("would add 1"))
                }
            }
        }
    }

    private static func make(_ file: Existing, at url: URL) async throws {
        switch file {
        case .missing:
            break
        case .zeroBytes:
            try Data().write(to: url)
        case .emptyDatabaseRollbackJournal, .emptyDatabaseWAL, .foreignDatabase:
            // As the sqlite3 shell would make them: an empty file that SQLite initializes.
            try Data().write(to: url)
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            switch file {
            case .emptyDatabaseWAL: try connection.execute("PRAGMA journal_mode = WAL")
            case .foreignDatabase: try connection.execute("CREATE TABLE theirs (x); INSERT INTO theirs VALUES (1)")
            default: try connection.execute("PRAGMA user_version = 0")
            }
        case .store, .newerFormatStore:
            let store = RecordStore(url: url)
            try await store.put("notes", key: "a", data: Data("1".utf8))
            await store.close()
            if file == .newerFormatStore {
                try SQLiteConnection(path: url.path, busyTimeout: .seconds(5)).execute("PRAGMA user_version = 99")
            }
        }
    }

    /// Every file in `directory`, names and bytes.
    private static func fingerprint(_ directory: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            result[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return result
    }
}
