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
        try await itemVersion(of: collection, inline: false)
    }

    /// ``itemVersion(of:)``, read inline on the caller's thread when `inline` allows it and a
    /// reader is free (a typed change stream asks it once per element).
    nonisolated func itemVersion(of collection: String, inline: Bool) async throws -> Int? {
        let name = try RecordNames.collection(collection, operation: .itemVersion)
        let state = try await performRead(.itemVersion, collection: name, inline: inline) { source in
            try source.engine?.itemVersions.itemVersion(name) ?? .absent
        }
        if case .recorded(let version, _) = state { return version }
        return nil
    }

    /// Every collection with a recorded item version, by name (see ``itemVersion(of:)``).
    /// - Throws: ``RecordStoreError`` when the store cannot be opened or read.
    public nonisolated func itemVersions() async throws -> [String: Int] {
        try await performRead(.itemVersions, collection: nil) { try $0.engine?.itemVersions.all() ?? [:] }
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
                let state = try engine.itemVersions.itemVersion(name)
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
            return try engine.itemVersions.recordWithItemVersion(name, key: key)
        }
    }
}

extension RecordTransaction {
    /// The collection's item-version state as this transaction sees it.
    func storedItemVersion(of collection: String) throws -> StoredItemVersion {
        try checkUsable(collection, .itemVersion)
        return try context.engine.itemVersions.itemVersion(try RecordNames.collection(collection, operation: .itemVersion))
    }

    /// Records `version` as the collection's item version and `coding` as its payload
    /// strategies (nil: the defaults), establishing the collection if needed.
    func setItemVersion(_ version: Int, coding: String?, of collection: String) throws {
        try checkUsable(collection, .setItemVersion)
        let name = try RecordNames.collection(collection, operation: .setItemVersion)
        let id = try context.engine.records.establish(name)
        try context.engine.itemVersions.setItemVersion(version, coding: coding, collectionID: id, collection: name)
    }

    /// The per-record item versions of `collection` as this transaction sees them, by key.
    func recordItemVersions(of collection: String) throws -> [String: Int] {
        try checkUsable(collection, .itemVersion)
        return try context.engine.itemVersions.recordItemVersions(try RecordNames.collection(collection, operation: .itemVersion))
    }

    /// Forgets the per-record item versions of `collection` up to `version`.
    func clearRecordItemVersions(of collection: String, upTo version: Int) throws {
        try checkUsable(collection, .setItemVersion)
        try context.engine.itemVersions.clearRecordItemVersions(
            try RecordNames.collection(collection, operation: .setItemVersion), upTo: version)
    }

    /// Applies `changes` without capturing them for sync: a migration's rewrites, which every
    /// device makes on its own (docs/SYNC.md "Item versions").
    func applyWithoutSyncCapture(_ collection: String, changes: RecordChanges) throws {
        try context.withOrigin(.migration) { try applyWithoutReport(collection, changes: changes) }
    }
}
