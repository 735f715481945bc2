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


/// The gateway of item versions, on the connection of one request: the item version and
/// payload strategies each collection records (formats 4 and 6: `collections.item_version`,
/// `collections.payload_coding`), and the item versions single synced records hold of their
/// own (format 8: `sync_records.item_version`).
///
/// A store of an older format is read as it is (reads never migrate): where it lacks a column
/// or a table, the answer is what that format means (no item version recorded, default
/// strategies, no record holding a version of its own), never an error.
struct ItemVersionsTable {
    let runner: StatementRunner

    // MARK: Older formats

    /// True when `failure` says the store has no `collections.item_version` yet: an older
    /// format read as it is (reads never migrate), where no item version is recorded.
    private static func predatesItemVersions(_ failure: any Error) -> Bool {
        sqliteMessage(of: failure)?.contains("item_version") == true
    }

    /// True when `failure` says the store has no `collections.payload_coding` yet (a format
    /// before 6, read as it is): every payload there has the default strategies.
    private static func predatesPayloadCoding(_ failure: any Error) -> Bool {
        sqliteMessage(of: failure)?.contains("payload_coding") == true
    }

    /// True when `failure` says the store has no `sync_records` yet (a format before 5).
    private static func predatesSync(_ failure: any Error) -> Bool {
        sqliteMessage(of: failure)?.contains("sync_records") == true
    }

    /// True when `failure` says the store has no per-record item versions yet: a format before
    /// 8 (or before sync, 5) read as it is, where every record holds its collection's version.
    private static func predatesRecordItemVersions(_ failure: any Error) -> Bool {
        predatesSync(failure) || predatesItemVersions(failure)
    }

    /// SQLite's message when `failure` is a store error of SQLite.
    private static func sqliteMessage(of failure: any Error) -> String? {
        guard let failure = failure as? RecordStoreError, failure.code == .sqlite else { return nil }
        return failure.sqliteMessage
    }

    // MARK: Collections

    /// The state of a row: `item_version` at `column`, `payload_coding` at `column + 1`
    /// (when the statement has it).
    private static func state(_ statement: Statement, at column: Int32, hasCoding: Bool) -> StoredItemVersion {
        guard !statement.isNull(at: column) else { return .unrecorded }
        let coding = hasCoding && !statement.isNull(at: column + 1) ? statement.string(at: column + 1) : nil
        return .recorded(Int(statement.int64(at: column)), coding: coding)
    }

    /// The item-version state of `name`.
    func itemVersion(_ name: String) throws -> StoredItemVersion {
        do {
            return try itemVersionColumn(name, withCoding: true)
        } catch where Self.predatesPayloadCoding(error) {
            do {
                return try itemVersionColumn(name, withCoding: false)
            } catch where Self.predatesItemVersions(error) {
                return try RecordsTable(runner: runner).collectionID(name) == nil ? .absent : .unrecorded
            }
        } catch where Self.predatesItemVersions(error) {
            return try RecordsTable(runner: runner).collectionID(name) == nil ? .absent : .unrecorded
        }
    }

    private func itemVersionColumn(_ name: String, withCoding: Bool) throws -> StoredItemVersion {
        let sql: StaticString = withCoding
            ? "SELECT item_version, payload_coding FROM collections WHERE name = ?1"
            : "SELECT item_version FROM collections WHERE name = ?1"
        return try runner.one(sql, name, collection: name) { Self.state($0, at: 0, hasCoding: withCoding) } ?? .absent
    }

    /// One record of `name`, the collection's item-version state and the item version the
    /// record holds of its own (format 8; nil: its collection's), in one statement.
    func recordWithItemVersion(_ name: String, key: String) throws -> (StoredItemVersion, StoredRecord?, own: Int?) {
        do {
            return try recordWithItemVersionColumns(name, key: key)
        } catch where Self.predatesPayloadCoding(error) || Self.predatesItemVersions(error)
            || Self.predatesSync(error)
        {
            // An older format, read as it is: the state, the record and its own version by
            // three statements (the last a pull can only make newer, never hide a newer one).
            let state = try itemVersion(name)
            guard state != .absent, let record = try RecordsTable(runner: runner).record(name, key: key) else {
                return (state, nil, nil)
            }
            return (state, record, try recordItemVersion(name, key: key))
        }
    }

    private func recordWithItemVersionColumns(_ name: String, key: String) throws -> (StoredItemVersion, StoredRecord?, own: Int?) {
        try runner.one(
            """
            SELECT r.payload, r.version, c.item_version, c.payload_coding, s.item_version FROM collections c
            LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
            LEFT JOIN sync_records s ON s.collection = ?1 AND s.key = ?2 AND r.version IS NOT NULL
            WHERE c.name = ?1
            """, name, key, collection: name, key: key
        ) { statement -> (StoredItemVersion, StoredRecord?, own: Int?) in
            let state = Self.state(statement, at: 2, hasCoding: true)
            guard !statement.isNull(at: 1) else { return (state, nil, nil) }
            let record = StoredRecord(key: key, data: statement.data(at: 0), version: RecordVersion(statement.int64(at: 1)))
            return (state, record, statement.isNull(at: 4) ? nil : Int(statement.int64(at: 4)))
        } ?? (.absent, nil, nil)
    }

    /// The id (and sync flag) of `name` when its recorded item version is `version` and its
    /// payload strategies `coding` (nil: the defaults), in one statement; nil otherwise (not
    /// established, another version or coding, none recorded, or an older format). The fast
    /// check of a repository's save, which then needs no other lookup of the collection. Only
    /// on the writer (always at the current format).
    func collectionID(_ name: String, ifItemVersion version: Int, coding: String?) throws -> CollectionRef? {
        // A write that confirmed them before, with nothing written to the store by any other
        // connection since and no item version set on this one, makes no lookup
        // (`CollectionRefCache`, the same rule as the collection's id).
        let recorded = CollectionRefCache.RecordedItemVersion(version: version, coding: coding)
        if let known = runner.connection.collectionRefs.refInWrite(name, recorded: recorded) { return known }
        let found: CollectionRef?
        do {
            found = try runner.one(
                "SELECT id, synced FROM collections WHERE name = ?1 AND item_version = ?2 AND payload_coding IS ?3",
                name, version, coding, collection: name
            ) { CollectionRef(id: $0.int64(at: 0), synced: $0.int64(at: 1) != 0) }
        } catch where Self.predatesItemVersions(error) || Self.predatesPayloadCoding(error) {
            return nil
        }
        if let found { runner.connection.collectionRefs.noteInWrite(found, for: name, recorded: recorded) }
        return found
    }

    /// Every recorded item version, by collection name.
    func all() throws -> [String: Int] {
        var versions: [String: Int] = [:]
        do {
            try runner.each("SELECT name, item_version FROM collections WHERE item_version IS NOT NULL") {
                versions[$0.string(at: 0)] = Int($0.int64(at: 1))
            }
        } catch where Self.predatesItemVersions(error) {
            return [:]
        }
        return versions
    }

    func setItemVersion(_ version: Int, coding: String?, collectionID id: Int64, collection: String) throws {
        try runner.execute(
            "UPDATE collections SET item_version = ?2, payload_coding = ?3 WHERE id = ?1", id, version, coding,
            collection: collection)
        runner.connection.collectionRefs.invalidate()
    }

    // MARK: Single records

    /// The per-record item versions of collection `name`: the lowest, and the records above
    /// `version`. Two walks of the partial index `sync_records_item_version`.
    func recordItemVersions(_ name: String, above version: Int) throws -> RecordItemVersions {
        do {
            let lowest = try runner.one(
                "SELECT min(item_version) FROM sync_records WHERE collection = ?1 AND item_version IS NOT NULL",
                name, collection: name, Self.ownItemVersion)
            guard lowest != nil else { return .none }
            var newer: [String: Int] = [:]
            try runner.each(
                "SELECT key, item_version FROM sync_records WHERE collection = ?1 AND item_version > ?2",
                name, version, collection: name
            ) { newer[$0.string(at: 0)] = Int($0.int64(at: 1)) }
            return RecordItemVersions(lowest: lowest, newer: newer)
        } catch where Self.predatesRecordItemVersions(error) {
            return .none
        }
    }

    /// Every per-record item version of collection `name`, by key.
    func recordItemVersions(_ name: String) throws -> [String: Int] {
        var versions: [String: Int] = [:]
        do {
            try runner.each(
                "SELECT key, item_version FROM sync_records WHERE collection = ?1 AND item_version IS NOT NULL",
                name, collection: name
            ) { versions[$0.string(at: 0)] = Int($0.int64(at: 1)) }
        } catch where Self.predatesRecordItemVersions(error) {
            return [:]
        }
        return versions
    }

    /// The item version record `key` of `name` holds of its own; nil when it holds its collection's.
    func recordItemVersion(_ name: String, key: String) throws -> Int? {
        do {
            return try runner.one(
                "SELECT item_version FROM sync_records WHERE collection = ?1 AND key = ?2", name, key,
                collection: name, key: key, Self.ownItemVersion)
        } catch where Self.predatesRecordItemVersions(error) {
            return nil
        }
    }

    /// Forgets the per-record item versions of `name` up to `version` (a migration brought
    /// those records to the collection's version, `version`).
    func clearRecordItemVersions(_ name: String, upTo version: Int) throws {
        do {
            try runner.execute(
                """
                UPDATE sync_records SET item_version = NULL
                WHERE collection = ?1 AND item_version IS NOT NULL AND item_version <= ?2
                """, name, version, collection: name)
        } catch where Self.predatesRecordItemVersions(error) {
            return
        }
    }

    /// The item version in column 0, nil when it is NULL.
    private static func ownItemVersion(_ statement: Statement) -> Int? {
        statement.isNull(at: 0) ? nil : Int(statement.int64(at: 0))
    }
}
