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
        let limits = loadWindowLimits
        for attempt in 0..<ItemMigrator.attempts {
            let read = try await store.readWithItemVersion(collection, operation: .read) { engine, name, state in
                let records = try engine.itemVersions.recordItemVersions(name, above: current)
                // Also after a migration: a pull may have brought older records meanwhile.
                if try migrator.needsMigration(state, records: records) {
                    if attempt == ItemMigrator.attempts - 1 { throw migrator.olderRecordsKeptArriving() }
                    return LoadRead<Item>.needsMigration
                }
                return .loaded(try Self.scan(
                    engine, name, collection: collection, newer: records.newer, partial: partial,
                    makeCoder: { PayloadCoder(coding, strategies: strategies) }, migrator: migrator,
                    limits: limits))
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
        return nil  // not reached: the last attempt loads or throws
    }

    /// The records of `name` decoded in key order, skipping (`partial`) or stopping at the
    /// first that is `newer` or does not decode. The payloads are copied out of the statement
    /// a window at a time and a large window is decoded on several threads (`LoadWindow`); the
    /// outcome is the one a decode of each record in turn gives.
    private static func scan(
        _ engine: RecordEngine, _ name: String, collection: String, newer: [String: Int], partial: Bool,
        makeCoder: @escaping @Sendable () -> PayloadCoder, migrator: ItemMigrator,
        limits: LoadWindow.Limits
    ) throws -> LoadedItems<Item> {
        var loaded = LoadedItems<Item>()
        var decodingFailure: RepositoryError?
        var window = LoadWindow(limits)
        var decoding: WindowDecoding<Item>?
        // A load that ends early (a newer record, a failed read) takes no more items.
        defer { decoding?.cancel() }
        let decode = { @Sendable (payload: UnsafeRawBufferPointer, key: String, coder: PayloadCoder) throws(RepositoryError) -> Item in
            do {
                return try Self.decode(payload, key: key, collection: collection, decoder: coder)
            } catch let error as RepositoryError {
                throw error
            } catch {
                throw RepositoryError(code: .undecodableRecord, collection: collection, key: key, underlying: error)
            }
        }
        /// Takes the results of the window being decoded, if any.
        func finishDecoding() {
            guard let running = decoding else { return }
            decoding = nil
            guard decodingFailure == nil else { return }
            for chunk in running.finish() {
                decodingFailure = loaded.take(chunk, of: running.window, partial: partial)
                if decodingFailure != nil { return }
            }
        }
        /// Takes the results of the window before, then starts decoding the one just read.
        func decodeWindow() {
            finishDecoding()
            if decodingFailure == nil, window.count > 0 {
                decoding = WindowDecoding(window, partial: partial, makeCoder: makeCoder, decode)
            }
            window = LoadWindow(limits)
        }
        _ = try engine.records.forEachRecordPayload(name) { key, payload, version in
            if !newer.isEmpty, let itemVersion = newer[key] {
                let error = migrator.newerRecordError(key: key, version: itemVersion)
                guard partial else {
                    loaded.failure = error
                    return false
                }
                window.append(key: key, version: version, failure: error)
            } else if decodingFailure == nil {
                window.append(key: key, payload: payload, version: version)
            }
            if window.isFull {
                decodeWindow()
                // Without newer records nothing can take precedence over a decoding failure.
                if decodingFailure != nil, newer.isEmpty { return false }
            }
            return true
        }
        if loaded.failure == nil {
            decodeWindow()
            finishDecoding()
        }
        if loaded.failure == nil { loaded.failure = decodingFailure }
        if loaded.failure != nil {
            loaded.items = []
            loaded.keys = []
            loaded.versions = []
        }
        return loaded
    }

    /// Tests: loads copy and decode in windows of other sizes.
    func useLoadWindow(_ limits: LoadWindow.Limits) {
        loadWindowLimits = limits
    }

    /// One record, after migrating the collection if it holds older items.
    /// A record written by a newer app (pulled from a device running it) throws.
    func currentRecord(_ key: String) async throws -> StoredRecord? {
        let current = itemVersion
        for attempt in 0..<ItemMigrator.attempts {
            let (state, record, own) = try await store.recordWithItemVersion(collection, key: key)
            let records = RecordItemVersions(lowest: own, newer: [:])
            let needed = try migrator.needsMigration(state, records: records)
            if needed, attempt == ItemMigrator.attempts - 1 { throw migrator.olderRecordsKeptArriving() }
            if !needed {
                isPrepared = true
                if let own, own > current { throw migrator.newerRecordError(key: key, version: own) }
                return record
            }
            try await migrate()
        }
        return nil  // not reached: the last attempt returns or throws
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
        try await store.write(origin: .library, collection: collection) { transaction in try migrator.run(in: transaction) }
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
