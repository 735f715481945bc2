import Foundation

/// What the store holds about the item version of one collection (format 4, see
/// docs/FORMAT.md: `collections.item_version`) and its payloads' strategies (format 6:
/// `collections.payload_coding`).
enum StoredItemVersion: Sendable, Equatable {
    /// The collection is not established.
    case absent
    /// The collection exists, but no item version was ever recorded for it (it was written
    /// before format 4, or only by the store's record-level API).
    case unrecorded
    /// The item version a repository recorded, with its payload strategies (nil: Foundation's
    /// defaults, also for stores written before format 6).
    case recorded(Int, coding: String?)
}

extension RecordStore {
    /// The item version a ``RecordRepository`` recorded for `collection`: the version of the
    /// item type its records were written with. Nil when the collection is not established
    /// or no repository with item versions ever wrote it.
    ///
    /// - Throws: ``RecordStoreError`` when the store cannot be opened or read.
    public nonisolated func itemVersion(of collection: String) async throws -> Int? {
        let name = try RecordNames.collection(collection, operation: .itemVersion)
        let state = try await performRead(.itemVersion, collection: name) { source in
            try source.engine?.itemVersion(name) ?? .absent
        }
        if case .recorded(let version, _) = state { return version }
        return nil
    }

    /// Every collection with a recorded item version, by name (see ``itemVersion(of:)``).
    /// - Throws: ``RecordStoreError`` when the store cannot be opened or read.
    public nonisolated func itemVersions() async throws -> [String: Int] {
        try await performRead(.itemVersions, collection: nil) { try $0.engine?.itemVersions() ?? [:] }
    }

    /// Runs `body` in one read transaction together with reading the collection's item
    /// version, so both come from one state of the store. `body` is not called when the
    /// collection is not established.
    nonisolated(nonsending) func readWithItemVersion<T: Sendable>(
        _ collection: String, operation: StoreOperation, inline: Bool = false,
        _ body: @Sendable (RecordEngine, String, StoredItemVersion) throws -> T
    ) async throws -> (itemVersion: StoredItemVersion, result: T?) {
        let name = try RecordNames.collection(collection, operation: operation)
        return try await performRead(operation, collection: name, inline: inline) { source in
            guard let engine = source.engine else { return (StoredItemVersion.absent, nil) }
            return try engine.readTransaction {
                let state = try engine.itemVersion(name)
                let result = state == .absent ? nil : try body(engine, name, state)
                return (state, result)
            }
        }
    }

    /// One record together with the collection's item version, read by one statement (so
    /// both come from one state of the store), and the item version the record holds of its
    /// own (format 8; nil: its collection's). Runs inline when the store is open and idle.
    nonisolated(nonsending) func recordWithItemVersion(
        _ collection: String, key: String
    ) async throws -> (itemVersion: StoredItemVersion, record: StoredRecord?, own: Int?) {
        let name = try RecordNames.collection(collection, operation: .record)
        let key = try RecordNames.key(key, collection: name, operation: .record)
        return try await performRead(.record, collection: name, inline: true) { source in
            guard let engine = source.engine else { return (.absent, nil, nil) }
            // A record pulled from another device may hold an item version of its own: read with
            // the record, by the same statement.
            return try engine.recordWithItemVersion(name, key: key)
        }
    }
}

extension RecordTransaction {
    /// The collection's item-version state as this transaction sees it.
    func storedItemVersion(of collection: String) throws -> StoredItemVersion {
        try checkUsable(collection, .itemVersion)
        return try context.engine.itemVersion(try RecordNames.collection(collection, operation: .itemVersion))
    }

    /// Records `version` as the collection's item version and `coding` as its payload
    /// strategies (nil: the defaults), establishing the collection if needed.
    func setItemVersion(_ version: Int, coding: String?, of collection: String) throws {
        try checkUsable(collection, .setItemVersion)
        let name = try RecordNames.collection(collection, operation: .setItemVersion)
        let id = try context.engine.establish(name)
        try context.engine.setItemVersion(version, coding: coding, collectionID: id, collection: name)
    }
}

extension RecordEngine {
    /// True when `failure` says the store has no `collections.item_version` yet: an older
    /// format read as it is (reads never migrate), where no item version is recorded.
    private static func predatesItemVersions(_ failure: any Error) -> Bool {
        guard let failure = failure as? RecordStoreError, failure.code == .sqlite else { return false }
        return failure.sqliteMessage?.contains("item_version") == true
    }

    /// True when `failure` says the store has no `collections.payload_coding` yet (a format
    /// before 6, read as it is): every payload there has the default strategies.
    private static func predatesPayloadCoding(_ failure: any Error) -> Bool {
        guard let failure = failure as? RecordStoreError, failure.code == .sqlite else { return false }
        return failure.sqliteMessage?.contains("payload_coding") == true
    }

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
                return try collectionID(name) == nil ? .absent : .unrecorded
            }
        } catch where Self.predatesItemVersions(error) {
            return try collectionID(name) == nil ? .absent : .unrecorded
        }
    }

    private func itemVersionColumn(_ name: String, withCoding: Bool) throws -> StoredItemVersion {
        let sql: StaticString = withCoding
            ? "SELECT item_version, payload_coding FROM collections WHERE name = ?1"
            : "SELECT item_version FROM collections WHERE name = ?1"
        return try run(collection: name) {
            try connection.withStatement(sql) { statement in
                try statement.bind(name, at: 1)
                guard try statement.step() else { return .absent }
                return Self.state(statement, at: 0, hasCoding: withCoding)
            }
        }
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
            guard state != .absent, let record = try record(name, key: key) else { return (state, nil, nil) }
            return (state, record, try recordItemVersion(name, key: key))
        }
    }

    /// True when `failure` says the store has no `sync_records` yet (a format before 5).
    private static func predatesSync(_ failure: any Error) -> Bool {
        guard let failure = failure as? RecordStoreError, failure.code == .sqlite else { return false }
        return failure.sqliteMessage?.contains("sync_records") == true
    }

    private func recordWithItemVersionColumns(_ name: String, key: String) throws -> (StoredItemVersion, StoredRecord?, own: Int?) {
        try run(collection: name, key: key) {
            try connection.withStatement(
                """
                SELECT r.payload, r.version, c.item_version, c.payload_coding, s.item_version FROM collections c
                LEFT JOIN records r ON r.collection_id = c.id AND r.key = ?2
                LEFT JOIN sync_records s ON s.collection = ?1 AND s.key = ?2 AND r.version IS NOT NULL
                WHERE c.name = ?1
                """
            ) { statement in
                try statement.bind(name, at: 1)
                try statement.bind(key, at: 2)
                guard try statement.step() else { return (.absent, nil, nil) }
                let state = Self.state(statement, at: 2, hasCoding: true)
                guard !statement.isNull(at: 1) else { return (state, nil, nil) }
                let record = StoredRecord(key: key, data: statement.data(at: 0), version: RecordVersion(statement.int64(at: 1)))
                return (state, record, statement.isNull(at: 4) ? nil : Int(statement.int64(at: 4)))
            }
        }
    }

    /// The id (and sync flag) of `name` when its recorded item version is `version` and its
    /// payload strategies `coding` (nil: the defaults), in one statement; nil otherwise (not
    /// established, another version or coding, none recorded, or an older format). The fast
    /// check of a repository's save, which then needs no other lookup of the collection. Only
    /// on the writer (always at the current format).
    func collectionID(_ name: String, ifItemVersion version: Int, coding: String?) throws -> CollectionRef? {
        do {
            return try run(collection: name) {
                try connection.withStatement(
                    "SELECT id, synced FROM collections WHERE name = ?1 AND item_version = ?2 AND payload_coding IS ?3"
                ) { statement in
                    try statement.bind(name, at: 1)
                    try statement.bind(Int64(version), at: 2)
                    if let coding { try statement.bind(coding, at: 3) } else { try statement.bindNull(at: 3) }
                    guard try statement.step() else { return nil }
                    return CollectionRef(id: statement.int64(at: 0), synced: statement.int64(at: 1) != 0)
                }
            }
        } catch where Self.predatesItemVersions(error) || Self.predatesPayloadCoding(error) {
            return nil
        }
    }

    /// Every recorded item version, by collection name.
    func itemVersions() throws -> [String: Int] {
        do {
            return try itemVersionsColumn()
        } catch where Self.predatesItemVersions(error) {
            return [:]
        }
    }

    private func itemVersionsColumn() throws -> [String: Int] {
        try run {
            try connection.withStatement(
                "SELECT name, item_version FROM collections WHERE item_version IS NOT NULL"
            ) { statement in
                var versions: [String: Int] = [:]
                while try statement.step() {
                    versions[statement.string(at: 0)] = Int(statement.int64(at: 1))
                }
                return versions
            }
        }
    }

    func setItemVersion(_ version: Int, coding: String?, collectionID id: Int64, collection: String) throws {
        try run(collection: collection) {
            try connection.withStatement(
                "UPDATE collections SET item_version = ?2, payload_coding = ?3 WHERE id = ?1"
            ) { statement in
                try statement.bind(id, at: 1)
                try statement.bind(Int64(version), at: 2)
                if let coding { try statement.bind(coding, at: 3) } else { try statement.bindNull(at: 3) }
                try statement.run()
            }
        }
    }
}
