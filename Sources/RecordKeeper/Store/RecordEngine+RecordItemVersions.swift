import Foundation

/// The item versions that single records of a synced collection hold when they differ from
/// what the collection records (format 8, `sync_records.item_version`): a value pulled from a
/// device that runs another version of the app keeps the version it was written at until a
/// repository migrates it or the device writes the record.
struct RecordItemVersions: Sendable, Equatable {
    /// The lowest version a record holds, nil when no record has one of its own.
    var lowest: Int?
    /// The records holding a version above the one asked about (written by a newer app), by key.
    var newer: [String: Int]

    static let none = RecordItemVersions(lowest: nil, newer: [:])
}

extension RecordEngine {
    /// True when `failure` says the store has no per-record item versions yet: a format before
    /// 8 (or before sync, 5) read as it is, where every record holds its collection's version.
    private static func predatesRecordItemVersions(_ failure: any Error) -> Bool {
        guard let failure = failure as? RecordStoreError, failure.code == .sqlite,
            let message = failure.sqliteMessage
        else { return false }
        return message.contains("sync_records") || message.contains("item_version")
    }

    /// The per-record item versions of collection `name`: the lowest, and the records above
    /// `version`. Two walks of the partial index `sync_records_item_version`.
    func recordItemVersions(_ name: String, above version: Int) throws -> RecordItemVersions {
        do {
            return try run(collection: name) {
                let lowest: Int? = try connection.withStatement(
                    "SELECT min(item_version) FROM sync_records WHERE collection = ?1 AND item_version IS NOT NULL"
                ) { statement in
                    try statement.bind(name, at: 1)
                    guard try statement.step(), !statement.isNull(at: 0) else { return nil }
                    return Int(statement.int64(at: 0))
                }
                guard lowest != nil else { return .none }
                let newer: [String: Int] = try connection.withStatement(
                    "SELECT key, item_version FROM sync_records WHERE collection = ?1 AND item_version > ?2"
                ) { statement in
                    try statement.bind(name, at: 1)
                    try statement.bind(Int64(version), at: 2)
                    var newer: [String: Int] = [:]
                    while try statement.step() { newer[statement.string(at: 0)] = Int(statement.int64(at: 1)) }
                    return newer
                }
                return RecordItemVersions(lowest: lowest, newer: newer)
            }
        } catch where Self.predatesRecordItemVersions(error) {
            return .none
        }
    }

    /// Every per-record item version of collection `name`, by key.
    func recordItemVersions(_ name: String) throws -> [String: Int] {
        do {
            return try run(collection: name) {
                try connection.withStatement(
                    "SELECT key, item_version FROM sync_records WHERE collection = ?1 AND item_version IS NOT NULL"
                ) { statement in
                    try statement.bind(name, at: 1)
                    var versions: [String: Int] = [:]
                    while try statement.step() { versions[statement.string(at: 0)] = Int(statement.int64(at: 1)) }
                    return versions
                }
            }
        } catch where Self.predatesRecordItemVersions(error) {
            return [:]
        }
    }

    /// The item version record `key` of `name` holds of its own; nil when it holds its collection's.
    func recordItemVersion(_ name: String, key: String) throws -> Int? {
        do {
            return try run(collection: name, key: key) {
                try connection.withStatement(
                    "SELECT item_version FROM sync_records WHERE collection = ?1 AND key = ?2"
                ) { statement in
                    try statement.bind(name, at: 1)
                    try statement.bind(key, at: 2)
                    guard try statement.step(), !statement.isNull(at: 0) else { return nil }
                    return Int(statement.int64(at: 0))
                }
            }
        } catch where Self.predatesRecordItemVersions(error) {
            return nil
        }
    }

    /// Forgets the per-record item versions of `name` up to `version` (a migration brought
    /// those records to the collection's version, `version`).
    func clearRecordItemVersions(_ name: String, upTo version: Int) throws {
        do {
            try run(collection: name) {
                try connection.withStatement(
                    """
                    UPDATE sync_records SET item_version = NULL
                    WHERE collection = ?1 AND item_version IS NOT NULL AND item_version <= ?2
                    """
                ) { statement in
                    try statement.bind(name, at: 1)
                    try statement.bind(Int64(version), at: 2)
                    try statement.run()
                }
            }
        } catch where Self.predatesRecordItemVersions(error) {
            return
        }
    }
}

extension RecordTransaction {
    /// The per-record item versions of `collection` as this transaction sees them, by key.
    func recordItemVersions(of collection: String) throws -> [String: Int] {
        try checkUsable(collection, .itemVersion)
        return try context.engine.recordItemVersions(try RecordNames.collection(collection, operation: .itemVersion))
    }

    /// Forgets the per-record item versions of `collection` up to `version`.
    func clearRecordItemVersions(of collection: String, upTo version: Int) throws {
        try checkUsable(collection, .setItemVersion)
        try context.engine.clearRecordItemVersions(
            try RecordNames.collection(collection, operation: .setItemVersion), upTo: version)
    }

    /// Applies `changes` without capturing them for sync: a migration's rewrites, which every
    /// device makes on its own (docs/SYNC.md "Item versions").
    func applyWithoutSyncCapture(_ collection: String, changes: RecordChanges) throws {
        try context.withOrigin(.migration) { try applyWithoutReport(collection, changes: changes) }
    }
}
