import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `check` and `info`: the store as a whole.
enum StoreCommands {
    /// SQLite's integrity check, then format version and sizes. Exit 65 when problems are found.
    static func check(_ context: CommandContext) async throws -> ExitCode {
        let store = try context.store.existingStore()
        let problems: [String]
        do {
            problems = try await store.integrityCheck()
        } catch let error as RecordStoreError where error.code == .corruptStore {
            // SQLite can stop the check itself on a damaged page; that is the check's answer.
            try context.output.write("integrity: damaged (\(error.sqliteMessage ?? "the database file is damaged"))\n")
            throw ToolError(.dataError, "the store at \(context.store.path) is damaged: SQLite could not finish the "
                            + "integrity check; " + damageAdvice)
        }
        guard problems == ["ok"] else {
            try context.output.write("integrity: \(problems.count) problem(s)\n")
            for problem in problems {
                try context.output.write("  \(problem)\n")
            }
            throw ToolError(.dataError, "the store at \(context.store.path) failed the integrity check "
                            + "(\(problems.count) problem(s)); " + damageAdvice)
        }
        let info = try await store.info()
        let summaries = try await store.collections()
        try context.output.write("""
            integrity: ok
            format version: \(info.formatVersion)
            collections: \(summaries.count)
            records: \(summaries.reduce(0) { $0 + $1.recordCount })
            payload bytes: \(summaries.reduce(0) { $0 + $1.payloadBytes })
            file bytes: \(info.fileBytes.map(String.init) ?? "-")
            wal bytes: \(info.walBytes.map(String.init) ?? "-")
            free pages: \(info.freePageCount) of \(info.pageCount)

            """)
        // The item version repositories recorded, per collection (collections without one
        // are not listed).
        let itemVersions = try await store.itemVersions()
        for name in itemVersions.keys.sorted() {
            try context.output.write("item version: \(JSONText.displayName(name)) \(itemVersions[name] ?? 0)\n")
        }
        return .ok
    }

    /// What to do about a damaged store. Writes to it are not refused (they may still
    /// succeed, into the damaged file), so the message says to stop them first.
    private static let damageAdvice =
        "writes to it may still succeed but go into the damaged file: stop writing to it, keep a copy of the file "
        + "(with its -wal and -shm files) before changing it, then restore a backup or export what still reads into "
        + "a new store (docs/BACKUP.md, \"A damaged store\")"

    /// Path, format, SQLite settings and sizes.
    static func info(_ context: CommandContext) async throws -> ExitCode {
        let store = try context.store.existingStore()
        let info = try await store.info()
        let summaries = try await store.collections()
        try context.output.write("""
            path: \(info.path ?? context.store.path)
            format version: \(info.formatVersion)
            sqlite version: \(info.sqliteVersion)
            journal mode: \(info.journalMode)
            durability: \(info.durability.rawValue)
            page size: \(info.pageSize)
            pages: \(info.pageCount)
            free pages: \(info.freePageCount)
            file bytes: \(info.fileBytes.map(String.init) ?? "-")
            wal bytes: \(info.walBytes.map(String.init) ?? "-")
            collections: \(summaries.count)
            records: \(summaries.reduce(0) { $0 + $1.recordCount })

            """)
        return .ok
    }
}
