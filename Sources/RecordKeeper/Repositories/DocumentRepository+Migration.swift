public import Foundation

/// One step that brings a stored ``RecordDocument`` from schema version ``fromVersion`` to
/// `fromVersion + 1`, by rewriting its records. See
/// ``DocumentRepository/init(store:collection:migrations:)``.
///
/// A step must be a pure function of the records it is given: it runs inside the store's write
/// transaction and must not call the store.
public struct DocumentMigrationStep: Sendable {
    /// The schema version this step reads; it produces `fromVersion + 1`.
    public let fromVersion: Int
    /// Rewrites the records (the `_schema` record excepted) in place.
    let transform: @Sendable (_ records: inout [String: Data], _ collection: String) throws -> Void

    /// A step that rewrites the document's records, by key (the `_schema` record excepted): it
    /// may change, add, remove and rename records. Records it leaves alone are kept as stored.
    public static func records(
        from version: Int, _ transform: @escaping @Sendable (inout [String: Data]) throws -> Void
    ) -> DocumentMigrationStep {
        DocumentMigrationStep(fromVersion: version) { records, _ in try transform(&records) }
    }

    /// A step that edits every record of `group` as a JSON object (`[String: Any]` as
    /// `JSONSerialization` reads it). A failure names the record's key.
    public static func json(
        from version: Int, inGroup group: String,
        _ transform: @escaping @Sendable (inout [String: Any]) throws -> Void
    ) -> DocumentMigrationStep {
        let step = ItemMigrationStep.json(from: version, transform)
        return DocumentMigrationStep(fromVersion: version) { records, collection in
            for key in records.keys.sorted() where key.hasPrefix(group + "/") {
                guard let data = records[key] else { continue }
                do {
                    records[key] = try step.transform(data)
                } catch {
                    throw RepositoryError(
                        code: .migrationFailed, collection: collection, key: key, underlying: error,
                        itemVersion: version,
                        detail: "the step from schema version \(version) to \(version + 1) failed; nothing was changed")
                }
            }
        }
    }
}

extension DocumentRepository {
    /// Migrates the stored document when a step starts from its schema version (see
    /// ``init(store:collection:migrations:)``). Reads `_schema` first, so a current document
    /// costs one point read and no write.
    func migrateIfNeeded() async throws {
        guard !migrations.isEmpty,
              let record = try await store.record(collection, key: Self.schemaKey),
              try needsMigration(Self.storedVersion(record, collection: collection))
        else { return }
        let collection = collection
        let migrations = migrations
        try await store.write(origin: .library, collection: collection) { transaction in
            try Self.migrate(in: transaction, collection: collection, migrations: migrations)
        }
    }

    private nonisolated func needsMigration(_ version: Int) -> Bool {
        migrations[version] != nil && version < Document.supportedSchemaVersions.upperBound
    }

    private static func storedVersion(_ record: StoredRecord, collection: String) throws -> Int {
        do {
            return try RecordCoding.decode(Int.self, from: record.data)
        } catch {
            throw RepositoryError(code: .undecodableRecord, collection: collection, key: schemaKey, underlying: error)
        }
    }

    /// Runs the steps on the stored records inside `transaction`, checks that the result
    /// rebuilds, and writes the difference with the new `_schema`.
    private static func migrate(
        in transaction: RecordTransaction, collection: String, migrations: [Int: DocumentMigrationStep]
    ) throws {
        // Read again inside the transaction: another writer may have migrated meanwhile.
        guard let record = try transaction.record(collection, key: schemaKey) else { return }
        let found = try storedVersion(record, collection: collection)
        let target = Document.supportedSchemaVersions.upperBound
        guard migrations[found] != nil, found < target else { return }
        var stored = try transaction.read(collection) ?? [:]
        stored[schemaKey] = nil
        var records = stored
        for version in found..<target {
            guard let step = migrations[version] else {
                throw RepositoryError(
                    code: .missingMigrationStep, collection: collection, key: schemaKey, itemVersion: found,
                    detail: "no migration step from schema version \(version) to \(version + 1) "
                        + "(the stored document has version \(found)); nothing was changed")
            }
            do {
                try step.transform(&records, collection)
            } catch let error as RepositoryError {
                throw error
            } catch {
                throw RepositoryError(
                    code: .migrationFailed, collection: collection, underlying: error, itemVersion: found,
                    detail: "the step from schema version \(version) to \(version + 1) failed; nothing was changed")
            }
        }
        // The result must rebuild; the records the document produces are stored in its own
        // encoding, others as the steps left them.
        let document: Document
        do {
            document = try Document(from: DocumentRecords(collection: collection, schemaVersion: target, payloads: records))
        } catch {
            let keyed = error as? RepositoryError
            throw RepositoryError(
                code: .migrationFailed, collection: collection, key: keyed?.key,
                underlying: keyed?.underlying ?? error, itemVersion: found,
                detail: "the document migrated to schema version \(target) could not be rebuilt; nothing was changed")
        }
        var encoded = try encode(document, collection: collection)
        encoded[schemaKey] = try RecordCoding.encode(target)
        let migrated = records.merging(encoded) { _, own in own }
        stored[schemaKey] = record.data
        try transaction.applyWithoutReport(collection, changes: RecordChanges.difference(from: stored, to: migrated))
    }
}
