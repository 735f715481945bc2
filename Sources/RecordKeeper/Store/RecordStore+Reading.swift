public import Foundation

extension RecordStore {
    /// All records of `collection`, or nil when the collection was never established (or was
    /// removed). An established collection without records gives `[:]`.
    ///
    /// Reading never changes the file: it creates nothing and migrates nothing. When there is
    /// no store yet (no file, an empty file, an SQLite database without the store's format)
    /// the answer is nil. It sees the last committed state, without waiting for a write
    /// transaction that is running (in memory it waits; see <doc:Concurrency>).
    /// - Throws: ``RecordStoreError`` when the file cannot be read or is refused (not a
    ///   database, another application's database, a newer format); never an empty answer in
    ///   place of a failure.
    public nonisolated func read(_ collection: String) async throws -> [String: Data]? {
        let name = try RecordNames.collection(collection, operation: .read)
        return try await performRead(.read, collection: name) { try $0.engine?.records.readAll(name) }
    }

    /// The payload of one record, or nil when there is none.
    ///
    /// Point reads are short: when the reader is open and idle they run at once on the
    /// caller's thread instead of hopping to an executor, and never wait for a lock there
    /// (see <doc:Concurrency>).
    public nonisolated(nonsending) func value(_ collection: String, key: String) async throws -> Data? {
        let name = try RecordNames.collection(collection, operation: .value)
        let key = try RecordNames.key(key, collection: name, operation: .value)
        return try await performRead(.value, collection: name, inline: true) { try $0.engine?.records.payload(name, key: key) }
    }

    /// One record with its version, or nil when there is none.
    public nonisolated(nonsending) func record(_ collection: String, key: String) async throws -> StoredRecord? {
        let name = try RecordNames.collection(collection, operation: .record)
        let key = try RecordNames.key(key, collection: name, operation: .record)
        return try await performRead(.record, collection: name, inline: true) { try $0.engine?.records.record(name, key: key) }
    }

    /// The established collections, sorted by name, with their record counts.
    public nonisolated func collections() async throws -> [CollectionSummary] {
        try await performRead(.collections, collection: nil) { try $0.engine?.records.collections() ?? [] }
    }

    /// One page of `collection`'s records in key order (by UTF-8 bytes), the keys strictly
    /// after `after`, at most `limit`. Nil when the collection is not established.
    ///
    /// ```swift
    /// var after: String? = nil
    /// while let page = try await store.records("items", after: after), !page.isEmpty {
    ///     for record in page { print(record.key, record.version) }
    ///     after = page.last?.key
    /// }
    /// ```
    public nonisolated func records(_ collection: String, after: String? = nil, limit: Int = 1000) async throws -> [StoredRecord]? {
        let name = try RecordNames.collection(collection, operation: .records)
        guard limit > 0 else {
            throw RecordStoreError(
                code: .invalidArgument, operation: .records, collection: name,
                detail: "the page limit must be positive, not \(limit)")
        }
        let after = after.map(RecordNames.normalized)
        return try await performRead(.records, collection: name) { try $0.engine?.records.page(name, after: after, limit: limit) }
    }

    /// Every record of `collection` with its version, in key order (UTF-8 bytes), or nil when
    /// the collection is not established.
    public nonisolated func allRecords(_ collection: String) async throws -> [StoredRecord]? {
        let name = try RecordNames.collection(collection, operation: .allRecords)
        return try await performRead(.allRecords, collection: name) { source in
            guard let engine = source.engine else { return nil }
            var records: [StoredRecord] = []
            let exists = try engine.records.forEachRecord(name) { records.append($0) }
            return exists ? records : nil
        }
    }

    /// Every record of `collection` with its version, by key, or nil when not established.
    public nonisolated func versionedRecords(_ collection: String) async throws -> [String: StoredRecord]? {
        let name = try RecordNames.collection(collection, operation: .versionedRecords)
        return try await performRead(.versionedRecords, collection: name) { source in
            guard let engine = source.engine else { return nil }
            var records: [String: StoredRecord] = [:]
            let exists = try engine.records.forEachRecord(name) { records[$0.key] = $0 }
            return exists ? records : nil
        }
    }
}
