import Foundation

/// Loads and saves one ``RecordDocument`` stored as many records in a collection, writing only
/// what changed since the last confirmed document.
///
/// - The first save seeds the document: when the collection does not exist it is created with
///   an explicit replacement; when it exists (holding others' records) the document's records
///   are added next to them, on condition that none of them exists unseen.
/// - Later saves apply only the difference from the last confirmed document: changed records
///   are upserted, records the document no longer produces are removed, and nothing else is
///   touched, so records written by someone else survive.
/// - Every save is based on the versions last loaded or saved (and on the `_schema` record):
///   if another writer changed any of those records, it writes nothing and throws
///   ``RecordConflict``. ``ConflictPolicy/overwrite`` writes the changed records regardless.
/// - A document whose stored or own schema version is outside
///   ``RecordDocument/supportedSchemaVersions`` is refused with ``RepositoryError``, and
///   nothing is written.
///
/// ```swift
/// let progress = DocumentRepository<Progress>(store: store, collection: "progress")
/// var current = try await progress.load() ?? Progress()
/// current.positions["moby-dick"] = 42
/// try await progress.save(current)      // writes the record positions/moby-dick only
/// ```
public actor DocumentRepository<Document: RecordDocument> {
    /// The key of the record holding the document's schema version (a JSON integer).
    public static var schemaKey: String { "_schema" }

    /// The store the records live in.
    public nonisolated let store: RecordStore
    /// The collection holding the document's records.
    public nonisolated let collection: String

    /// What the repository last confirmed about the stored document.
    enum Confirmed {
        /// No document is stored; `versions` are those of the other records seen.
        case absent(versions: [String: RecordVersion])
        /// The document's records as stored (`_schema` included), and the versions seen.
        case present(payloads: [String: Data], versions: [String: RecordVersion])
    }

    /// Nil until the first load or save.
    private var confirmed: Confirmed?
    private var turns = OperationTurns()
    /// The steps that bring older stored documents forward, by the schema version they read.
    let migrations: [Int: DocumentMigrationStep]

    /// Creates a repository for the document in `collection` of `store`. Does no I/O.
    public init(store: RecordStore, collection: String) {
        self.init(store: store, collection: collection, migrations: [])
    }

    /// Creates a repository for the document in `collection` of `store`, with the `migrations`
    /// that bring a document stored with an older schema version up to
    /// `Document.supportedSchemaVersions.upperBound`. Does no I/O.
    ///
    /// When a load finds a stored schema version that a step starts from,
    /// the repository runs the steps up to the newest supported version on the stored records,
    /// checks that the result rebuilds as a `Document`, and writes the changed records and the
    /// new `_schema` in one transaction. All or nothing: a step that throws, a missing step, or
    /// a result that does not rebuild throws ``RepositoryError`` (`migrationFailed` or
    /// `missingMigrationStep`) and nothing is changed. A stored version no step starts from is
    /// handled as before: read by ``RecordDocument/init(from:)`` if supported, refused if not.
    ///
    /// ```swift
    /// // Schema 2 renamed the group "words" to "vocabulary".
    /// let progress = DocumentRepository<ReadingProgress>(
    ///     store: store, collection: "progress",
    ///     migrations: [.records(from: 1) { records in
    ///         for (key, data) in records where key.hasPrefix("words/") {
    ///             records[key] = nil
    ///             records["vocabulary/" + key.dropFirst("words/".count)] = data
    ///         }
    ///     }])
    /// ```
    /// - Precondition: each step starts below `Document.supportedSchemaVersions.upperBound`,
    ///   and no two steps start at the same version.
    public init(store: RecordStore, collection: String, migrations: [DocumentMigrationStep]) {
        self.store = store
        self.collection = collection
        var steps: [Int: DocumentMigrationStep] = [:]
        for step in migrations {
            precondition(
                step.fromVersion < Document.supportedSchemaVersions.upperBound,
                "a migration step from schema version \(step.fromVersion) does not lead to "
                    + "\(Document.supportedSchemaVersions.upperBound)")
            precondition(steps[step.fromVersion] == nil, "two migration steps from schema version \(step.fromVersion)")
            steps[step.fromVersion] = step
        }
        self.migrations = steps
    }

    /// The stored document, or nil when there is none (no `_schema` record). Remembers it as
    /// the base of the next save.
    /// - Throws: ``RepositoryError``: `unsupportedSchemaVersion` when the stored version is not
    ///   supported, `undecodableRecord` naming the key of a record that does not decode;
    ///   ``RecordStoreError`` when the store cannot be read.
    public func load() async throws -> Document? {
        await takeTurn()
        defer { turns.release() }
        return try await loadDocument().document
    }

    /// Saves `document`: seeds it the first time, afterwards applies only the difference from
    /// the last confirmed document. A document equal (record for record) to the confirmed one
    /// writes nothing.
    ///
    /// A save before any ``load()`` has seen nothing stored: it seeds the document, and when
    /// one is stored already (another repository or process saved it) it throws
    /// ``RecordConflict`` instead of replacing records it never saw. Load first to save over
    /// a stored document; with ``ConflictPolicy/overwrite`` the save loads first itself and
    /// replaces the stored document.
    ///
    /// `messages` are queued in the store's outbox in the same transaction as the records
    /// (also when the document is unchanged and no record is written): both commit or neither.
    ///
    /// ```swift
    /// try await progress.save(current, enqueue: [OutboxMessage(kind: "progress.save", payload: body)])
    /// ```
    /// - Throws: ``RepositoryError`` (`unsupportedSchemaVersion` for the value's or the stored
    ///   version, `unencodableValue`, `invalidDocumentKey`); ``RecordConflict`` when records it
    ///   is based on changed meanwhile; ``RecordStoreError`` (also for a message with an empty
    ///   kind or a duplicate id). When it throws, nothing is written, nothing is enqueued, and
    ///   the last confirmed document stays the base of the next save.
    public func save(
        _ document: Document, onConflict policy: ConflictPolicy = .fail, enqueue messages: [OutboxMessage] = []
    ) async throws {
        await takeTurn()
        defer { turns.release() }
        let queued = try ValidatedMessages(messages, operation: .apply)
        try Self.checkSupported(document.schemaVersion, collection: collection, detail: "the document to save uses it")
        let state: Confirmed
        if let confirmed {
            state = confirmed
        } else if policy == .fail {
            // Nothing was loaded, so nothing stored was seen: the save seeds, and a document
            // someone else stored conflicts instead of being replaced unseen (nothing written,
            // not even a migration of it: `load()` migrates).
            if let stored = try await store.record(collection, key: Self.schemaKey) {
                let version = try Self.storedSchema(stored, collection: collection)
                // A newer document says so first: no load of this version could read it.
                if version > Document.supportedSchemaVersions.upperBound {
                    try Self.checkSupported(version, collection: collection, detail: "the stored document uses it")
                }
                throw RecordConflict(
                    collection: collection, currentVersions: [Self.schemaKey: stored.version],
                    expectedVersions: [Self.schemaKey: nil])
            }
            state = .absent(versions: [:])
        } else {
            state = try await loadDocument().state
        }
        let payloads = try encode(document)
        let collection = collection
        let schemaKey = Self.schemaKey

        switch state {
        case .absent(let versions):
            var expected: [String: RecordVersion?] = [:]
            if policy == .fail { for key in payloads.keys { expected[key] = .some(versions[key]) } }
            let written = try await store.write(origin: .library, collection: collection) { [expected] transaction in
                try Self.checkStoredSchema(transaction.record(collection, key: schemaKey), collection: collection)
                try transaction.context.enqueue(queued)
                if try transaction.read(collection) == nil {
                    // A new collection: seed it with an explicit replacement. Applying the same
                    // payloads again writes nothing and returns their versions.
                    try transaction.replace(collection, values: payloads)
                    return try transaction.applyReturningVersions(collection, changes: RecordChanges(upserts: payloads), expecting: [:])
                }
                // Others' records exist: add the document's records beside them, none of
                // which may exist unless this repository saw it.
                return try transaction.applyReturningVersions(collection, changes: RecordChanges(upserts: payloads), expecting: expected)
            }
            confirmed = .present(payloads: payloads, versions: versions.merging(written) { _, new in new })

        case .present(let base, var versions):
            let changes = RecordChanges.difference(from: base, to: payloads)
            guard !changes.isEmpty || !queued.messages.isEmpty else { return }
            var expected: [String: RecordVersion?] = [:]
            if policy == .fail {
                // `.some` keeps a nil version as "must not exist"; the schema record must be
                // unchanged too, so a document upgraded by someone else is never written into.
                for key in changes.upserts.keys { expected[key] = .some(versions[key]) }
                for key in changes.removals { expected[key] = .some(versions[key]) }
                expected[schemaKey] = .some(versions[schemaKey])
            }
            let written = try await store.write(origin: .library, collection: collection) { [expected] transaction in
                try Self.checkStoredSchema(transaction.record(collection, key: schemaKey), collection: collection)
                try transaction.context.enqueue(queued)
                return try transaction.applyReturningVersions(collection, changes: changes, expecting: expected)
            }
            for key in changes.removals { versions[key] = nil }
            versions.merge(written) { _, new in new }
            confirmed = .present(payloads: payloads, versions: versions)
        }
    }

    // MARK: Helpers

    /// Reads the stored document and makes it the base of the next save.
    private func loadDocument() async throws -> (document: Document?, state: Confirmed) {
        try await migrateIfNeeded()
        let (document, state) = try await readDocument()
        confirmed = state
        return (document, state)
    }

    nonisolated func readDocument() async throws -> (document: Document?, state: Confirmed) {
        guard let records = try await store.versionedRecords(collection) else {
            return (nil, .absent(versions: [:]))
        }
        let versions = records.mapValues(\.version)
        guard let schemaRecord = records[Self.schemaKey] else {
            return (nil, .absent(versions: versions))
        }
        let schemaVersion = try Self.checkStoredSchema(schemaRecord, collection: collection) ?? 0
        var stored: [String: Data] = [:]
        stored.reserveCapacity(records.count)
        for (key, record) in records where key != Self.schemaKey { stored[key] = record.data }
        let document: Document
        do {
            document = try Document(from: DocumentRecords(collection: collection, schemaVersion: schemaVersion, payloads: stored))
        } catch let error as RepositoryError {
            throw error
        } catch {
            throw RepositoryError(
                code: .undecodableRecord, collection: collection, underlying: error,
                detail: "the document could not be rebuilt from its records")
        }
        // The base of the next save: the stored form of every record the document produces,
        // so a document migrated while loading is written in its new form when saved.
        var base: [String: Data] = [:]
        for key in try encode(document).keys {
            if let record = records[key] { base[key] = record.data }
        }
        base[Self.schemaKey] = schemaRecord.data
        return (document, .present(payloads: base, versions: versions))
    }

    /// The document's records, `_schema` included.
    private nonisolated func encode(_ document: Document) throws -> [String: Data] {
        try Self.encode(document, collection: collection)
    }

    /// The document's records, `_schema` included.
    static func encode(_ document: Document, collection: String) throws -> [String: Data] {
        var records = DocumentRecords(collection: collection, schemaVersion: document.schemaVersion)
        do {
            try document.encode(to: &records)
        } catch let error as RepositoryError {
            throw error
        } catch {
            throw RepositoryError(code: .unencodableValue, collection: collection, underlying: error)
        }
        var payloads = records.payloads
        payloads[schemaKey] = try RecordCoding.encode(document.schemaVersion)
        return payloads
    }

    /// The stored schema version (nil when there is no `_schema` record), checked to be
    /// supported.
    @discardableResult
    private static func checkStoredSchema(_ record: StoredRecord?, collection: String) throws -> Int? {
        guard let record else { return nil }
        let version = try storedSchema(record, collection: collection)
        try checkSupported(version, collection: collection, detail: "the stored document uses it")
        return version
    }

    /// The schema version the `_schema` record holds.
    /// - Throws: ``RepositoryError`` (`undecodableRecord`) when it is not an integer.
    private static func storedSchema(_ record: StoredRecord, collection: String) throws -> Int {
        do {
            return try RecordCoding.decode(Int.self, from: record.data)
        } catch {
            throw RepositoryError(code: .undecodableRecord, collection: collection, key: schemaKey, underlying: error)
        }
    }

    private static func checkSupported(_ version: Int, collection: String, detail: String) throws {
        guard Document.supportedSchemaVersions.contains(version) else {
            throw RepositoryError(
                code: .unsupportedSchemaVersion, collection: collection, key: schemaKey,
                schemaVersion: version, supportedSchemaVersions: Document.supportedSchemaVersions, detail: detail)
        }
    }

    private func takeTurn() async {
        if turns.takeIfFree() { return }
        await withCheckedContinuation { turns.enqueue($0) }
    }
}

extension DocumentRepository {
    /// The stored document after each committed transaction that changed the collection, in
    /// commit order, so a feature can refresh: nil when the document is absent (never saved,
    /// or removed). Commits by other stores on the file and by other processes count too; a
    /// consumer that falls behind gets one element for the commits it missed (see
    /// ``RecordStore/changes(in:)``).
    ///
    /// Each element is the document read again after that commit (so it may already include
    /// later commits). The stream does not change the base of this repository's next save:
    /// ``load()`` first to save on top of someone else's change. A document that cannot be
    /// rebuilt ends the stream: `next()` throws ``RepositoryError`` once, then returns nil.
    public nonisolated func changes() async -> DocumentChanges<Document> {
        DocumentChanges(records: await store.changes(in: collection), repository: self)
    }
}

/// The change stream of a ``DocumentRepository``: the document after each committed change.
public struct DocumentChanges<Document: RecordDocument>: AsyncSequence, Sendable {
    public typealias Element = Document?

    let records: AsyncStream<RecordChanges>
    let repository: DocumentRepository<Document>

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: records.makeAsyncIterator(), repository: repository)
    }

    /// Waits for the next committed change, then reads the document.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<RecordChanges>.AsyncIterator
        let repository: DocumentRepository<Document>
        var isFinished = false

        public mutating func next() async throws -> Document?? {
            guard !isFinished, await base.next() != nil else {
                isFinished = true
                return nil
            }
            do {
                return .some(try await repository.readDocument().document)
            } catch {
                isFinished = true
                throw error
            }
        }
    }
}
