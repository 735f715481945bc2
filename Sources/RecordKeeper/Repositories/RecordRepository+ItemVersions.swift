import Foundation

extension RecordRepository {
    /// Every item in key order, after migrating the collection if it holds older items; nil
    /// when the collection is not established. The records are decoded straight from the
    /// statement inside the read transaction (no `Data` or ``StoredRecord`` per record). A
    /// record written by a newer app (pulled from a device running it) is never decoded as
    /// `Item`: with `partial` it is skipped, like a record that does not decode; otherwise the
    /// first such record in key order is the load's failure, before any decoding failure (a
    /// decoding failure is the first in key order). Only a collection where some record holds
    /// an item version of its own (format 8) pays for looking them up by key: one walk of the
    /// partial index `sync_records_item_version` answers "none".
    /// - Throws: ``RepositoryError`` (`newerItemVersion` of the collection, `migrationFailed`,
    ///   `missingMigrationStep`, `codingMismatch`); ``RecordStoreError``.
    func currentItems(partial: Bool) async throws -> LoadedItems<Item>? {
        let current = itemVersion
        let migrator = migrator
        let collection = collection
        let coding = coding
        let strategies = strategies
        for attempt in 0..<2 {
            let read = try await store.readWithItemVersion(collection, operation: .read) { engine, name, state in
                let records = try engine.itemVersions.recordItemVersions(name, above: current)
                if try migrator.needsMigration(state, records: records), attempt == 0 { return LoadRead<Item>.needsMigration }
                return .loaded(try Self.scan(
                    engine, name, collection: collection, newer: records.newer, partial: partial,
                    decoder: PayloadCoder(coding, strategies: strategies), migrator: migrator))
            }.result
            switch read {
            case nil:
                isPrepared = true
                return nil
            case .loaded(let items)?:
                isPrepared = true
                return items
            case .needsMigration?:
                try await migrate()
            }
        }
        return nil  // not reached: the second attempt loads
    }

    /// The records of `name` decoded in key order, skipping (`partial`) or stopping at the
    /// first that is `newer` or does not decode.
    private static func scan(
        _ engine: RecordEngine, _ name: String, collection: String, newer: [String: Int], partial: Bool,
        decoder: PayloadCoder, migrator: ItemMigrator
    ) throws -> LoadedItems<Item> {
        var loaded = LoadedItems<Item>()
        var decodingFailure: RepositoryError?
        _ = try engine.records.forEachRecordPayload(name) { key, payload, version in
            if !newer.isEmpty, let itemVersion = newer[key] {
                let error = migrator.newerRecordError(key: key, version: itemVersion)
                if partial {
                    loaded.skipped.append(SkippedRecord(key: key, error: error))
                    return true
                }
                loaded.failure = error
                return false
            }
            guard decodingFailure == nil else { return true }  // still looking for a newer record
            do {
                loaded.items.append(try Self.decode(payload, key: key, collection: collection, decoder: decoder))
                loaded.keys.append(key)
                loaded.versions.append(version)
            } catch let error as RepositoryError {
                if partial {
                    loaded.skipped.append(SkippedRecord(key: key, error: error))
                } else {
                    decodingFailure = error
                    // Without newer records nothing can take precedence: stop here.
                    return !newer.isEmpty
                }
            }
            return true
        }
        if loaded.failure == nil { loaded.failure = decodingFailure }
        if loaded.failure != nil {
            loaded.items = []
            loaded.keys = []
            loaded.versions = []
        }
        return loaded
    }

    /// One record, after migrating the collection if it holds older items.
    /// A record written by a newer app (pulled from a device running it) throws.
    func currentRecord(_ key: String) async throws -> StoredRecord? {
        let current = itemVersion
        for attempt in 0..<2 {
            let (state, record, own) = try await store.recordWithItemVersion(collection, key: key)
            let records = RecordItemVersions(lowest: own, newer: [:])
            if try !migrator.needsMigration(state, records: records) || attempt == 1 {
                isPrepared = true
                if let own, own > current { throw migrator.newerRecordError(key: key, version: own) }
                return record
            }
            try await migrate()
        }
        return nil  // not reached: the second attempt returns
    }

    /// Before the first write: migrates the collection if it holds older items, so that a
    /// long migration runs on the store's executor, not inline in a small write. Every write
    /// still confirms the version inside its own transaction.
    func prepareForWriting() async throws {
        guard !isPrepared else { return }
        let current = itemVersion
        let (state, records) = try await store.readWithItemVersion(collection, operation: .read) { engine, name, _ in
            try engine.itemVersions.recordItemVersions(name, above: current)
        }
        if try migrator.needsMigration(state, records: records ?? .none) { try await migrate() }
        isPrepared = true
    }

    /// Migrates every stored item in one write transaction (see
    /// ``init(store:collection:itemVersion:migrations:)``).
    func migrate() async throws {
        let migrator = migrator
        try await store.write(origin: .library) { transaction in try migrator.run(in: transaction) }
        isPrepared = true
    }

    /// The function that turns a migrated payload into the item's stored form.
    static func makeFinisher(
        collection: String, coding: RecordCoding.Implementation, strategies: RecordCoding.Strategies
    ) -> @Sendable (RecordCoding.Strategies) -> (Data, String) throws -> Data {
        { stored in
            let reader = PayloadCoder(coding, strategies: stored)
            let writer = stored == strategies ? reader : PayloadCoder(coding, strategies: strategies)
            return { data, key in
                let item = try Self.decode(data, key: key, collection: collection, decoder: reader)
                return try writer.encode(item)
            }
        }
    }
}
