import Foundation

extension RecordRepository {
    /// Every record in key order, after migrating the collection if it holds older items; nil
    /// when the collection is not established.
    /// - Throws: ``RepositoryError`` (`newerItemVersion`, `migrationFailed`,
    ///   `missingMigrationStep`); ``RecordStoreError``.
    func currentRecords() async throws -> [StoredRecord]? {
        for attempt in 0..<2 {
            let (state, records) = try await store.readWithItemVersion(collection, operation: .read) { engine, name in
                var records: [StoredRecord] = []
                _ = try engine.forEachRecord(name) { records.append($0) }
                return records
            }
            if try !migrator.needsMigration(state) || attempt == 1 {
                isPrepared = true
                return records
            }
            try await migrate()
        }
        return nil  // not reached: the second attempt returns
    }

    /// One record, after migrating the collection if it holds older items.
    func currentRecord(_ key: String) async throws -> StoredRecord? {
        for attempt in 0..<2 {
            let (state, record) = try await store.recordWithItemVersion(collection, key: key)
            if try !migrator.needsMigration(state) || attempt == 1 {
                isPrepared = true
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
        let (state, _) = try await store.readWithItemVersion(collection, operation: .read) { _, _ in () }
        if try migrator.needsMigration(state) { try await migrate() }
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
