import Foundation

/// Facts about a store's file and format, from ``RecordStore/info()``.
public struct StoreInfo: Sendable, Equatable {
    /// The store file, or nil in memory.
    public let path: String?
    /// The on-disk format version (`PRAGMA user_version`).
    public let formatVersion: Int
    /// The SQLite library version in use.
    public let sqliteVersion: String
    /// `wal` for file stores, `memory` in memory.
    public let journalMode: String
    /// The durability in force on the connection (read from `PRAGMA synchronous`).
    public let durability: Durability
    /// True when SQLite syncs with `fcntl(F_FULLFSYNC)`, which also flushes the drive's cache
    /// (`PRAGMA fullfsync`): on Apple platforms with ``Durability/full``; false elsewhere, where
    /// `fsync` does that already (see docs/RELIABILITY.md).
    public let fullFsync: Bool
    public let pageSize: Int
    public let pageCount: Int
    public let freePageCount: Int
    /// The size of the database file, or nil in memory.
    public let fileBytes: Int64?
    /// The size of the write-ahead log, or nil when there is none.
    public let walBytes: Int64?
}

extension RecordStore {
    /// The store's format version, SQLite version, journal mode and sizes.
    ///
    /// Like every read it changes nothing. When there is no store yet the format version is 0;
    /// with no database file at all (missing or empty) the journal mode is `none` and the page
    /// figures are 0.
    public nonisolated func info() async throws -> StoreInfo {
        try await performRead(.info, collection: nil) { source in
            let connection: SQLiteConnection
            switch source {
            case .store(let engine): connection = engine.connection
            case .notAStore(let glance?): connection = glance
            case .notAStore(nil):
                return StoreInfo(
                    path: path, formatVersion: 0, sqliteVersion: SQLiteConnection.libraryVersion,
                    journalMode: "none", durability: options.durability,
                    fullFsync: FileSync.isFullFsync && options.durability == .full, pageSize: 0, pageCount: 0,
                    freePageCount: 0, fileBytes: try path.flatMap(Self.fileSize), walBytes: nil)
            }
            let engine = RecordEngine(connection: connection, path: path, operation: .info)
            return try engine.runner.run {
                StoreInfo(
                    path: path, formatVersion: try connection.userVersion(),
                    sqliteVersion: SQLiteConnection.libraryVersion, journalMode: try Self.journalMode(of: connection, path: path),
                    durability: try connection.synchronousIsFull() ? .full : .normal,
                    fullFsync: try connection.fullFsyncFlags().fullfsync, pageSize: try connection.pageSize(),
                    pageCount: try connection.pageCount(), freePageCount: try connection.freePageCount(),
                    fileBytes: try path.flatMap(Self.fileSize), walBytes: try path.flatMap { try Self.fileSize($0 + "-wal") })
            }
        }
    }

    /// The file's journal mode. An `immutable` connection (a store whose directory this process
    /// cannot write, read without its `-wal` and `-shm`) runs in a mode of its own and says
    /// `delete` even for a file in WAL mode: the file's header says which it is (its version
    /// bytes are 2 in WAL mode; otherwise every connection starts in `delete` mode).
    private static func journalMode(of connection: SQLiteConnection, path: String?) throws -> String {
        guard connection.mode == .immutable, let path else { return try connection.journalMode() }
        guard let header = try StoreOpener.readHeader(path) else { return "none" }
        return header.isWriteAheadLog ? "wal" : "delete"
    }

    /// SQLite's integrity check, and a look at every record key: `["ok"]` when the database is
    /// healthy, else one line per problem found (a key that is not valid UTF-8 is one: reads
    /// of its collection refuse it). `["ok"]` when there is no database file (missing or empty).
    public nonisolated func integrityCheck() async throws -> [String] {
        try await performRead(.integrityCheck, collection: nil) { source in
            let connection: SQLiteConnection
            switch source {
            case .store(let engine): connection = engine.connection
            case .notAStore(let glance?): connection = glance
            case .notAStore(nil): return ["ok"]
            }
            let engine = RecordEngine(connection: connection, path: path, operation: .integrityCheck)
            var problems = try engine.runner.run { try connection.integrityCheck() }
            guard case .store = source else { return problems }
            let keys = try engine.records.keysNotUTF8(limit: 100)
            if !keys.isEmpty, problems == ["ok"] { problems = [] }
            problems += keys.map {
                "collection \(RecordStoreError.quoted($0.collection)): the key \(RecordStoreError.quoted($0.key)) is not valid "
                    + "UTF-8 (shown with U+FFFD for the invalid bytes)"
            }
            return problems
        }
    }

    /// Limits the database to `pages` pages, so tests can make writes fail as on a full disk.
    nonisolated func setMaxPageCountForTesting(_ pages: Int) async throws {
        try await perform(.setMaxPageCount, collection: nil) { engine in
            try engine.runner.run { try engine.connection.setMaxPageCount(pages) }
        }
    }

    /// The size of a file, nil when it does not exist (a log after a checkpoint may not).
    private static func fileSize(_ path: String) throws -> Int64? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            return (attributes[.size] as? NSNumber)?.int64Value
        } catch {
            throw RecordStoreError(
                code: .ioError, operation: .info, path: path,
                detail: "could not read the file's size: \(error.localizedDescription)")
        }
    }
}
