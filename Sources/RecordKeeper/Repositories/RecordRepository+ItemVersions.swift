import Foundation

extension RecordRepository {
    /// Every record in key order, after migrating the collection if it holds older items, with
    /// the records written by a newer app (pulled from a device running it: their item version
    /// by key), which are never to be decoded as `Item`; nil when the collection is not
    /// established.
    /// - Throws: ``RepositoryError`` (`newerItemVersion`, `migrationFailed`,
    ///   `missingMigrationStep`); ``RecordStoreError``.
    func currentRecords() async throws -> (records: [StoredRecord], newer: [String: Int])? {
        let current = itemVersion
        for attempt in 0..<2 {
            let (state, read) = try await store.readWithItemVersion(collection, operation: .read) { engine, name in
                var records: [StoredRecord] = []
                _ = try engine.forEachRecord(name) { records.append($0) }
                return (records, try engine.recordItemVersions(name, above: current))
            }
            if try !migrator.needsMigration(state, records: read?.1 ?? .none) || attempt == 1 {
                isPrepared = true
                return read.map { ($0.0, $0.1.newer) }
            }
            try await migrate()
        }
        return nil  // not reached: the second attempt returns
    }

    /// `currentRecords()` for a load that never skips: a record written by a newer app throws.
    func currentRecordsOrThrow() async throws -> [StoredRecord]? {
        guard let (records, newer) = try await currentRecords() else { return nil }
        if !newer.isEmpty, let record = records.first(where: { newer[$0.key] != nil }), let version = newer[record.key] {
            throw migrator.newerRecordError(key: record.key, version: version)
        }
        return records
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
        let (state, records) = try await store.readWithItemVersion(collection, operation: .read) { engine, name in
            try engine.recordItemVersions(name, above: current)
        }
        if try migrator.needsMigration(state, records: records ?? .none) { try await migrate() }
        isPrepared = true
    }

    /// Migrates every stored item in one write transaction (see
    /// ``init(store:collection:itemVersion:migrations:)``).
    func migrate() async throws {
        let migrator = migrator
        try await store.write(teachesRepositories: false) { transaction in try migrator.run(in: transaction) }
        isPrepared = true
    }

    /// The function that turns a migrated payload into the item's stored form.
    static func makeFinisher(
        collection: String, coding: RecordCoding.Engine, strategies: RecordCoding.Strategies
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
