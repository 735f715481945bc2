import Foundation

/// A typed view of one collection: one record per item, keyed by the item's ID, with
/// per-record conflict detection.
///
/// Each item is stored as its own record, encoded by ``/RecordKeeperCoding/RecordCoding`` (JSON with sorted keys),
/// under the key its ID gives (see ``RecordKeyConvertible`` for the rule). Saves are
/// record-level: `save(_:onConflict:enqueue:)` writes only the items it is given and never removes
/// others; removal is ``delete(_:onConflict:enqueue:)``, and replacing the whole collection is the
/// separate ``replaceAll(with:onConflict:enqueue:)``. An item saved unchanged encodes to the same
/// bytes, and the store does not rewrite it.
///
/// The repository remembers the version of every record it loaded or saved, and bases each
/// write on those versions: if another writer changed a record since, the write stores nothing
/// and throws ``RecordConflict``. An item the repository has never seen is saved as new, so if
/// the store already holds it, that is a conflict too: load first, or pass
/// ``ConflictPolicy/overwrite`` for last-writer-wins. Versions are updated only after the
/// store's commit returned.
///
/// Writes through the same `RecordStore` by its own record API (`put`, `apply`, `replace`,
/// `delete`, `removeCollection`, `write { … }`) teach the repository the versions they give
/// its records, when the version such a write replaced is the one the repository knew: so
/// `store.write { tx in tx.put(…); tx.enqueue(…) }` followed by `save` is not a conflict with
/// the app itself. Nothing else teaches it: other repositories and documents, sync, other
/// `RecordStore` instances on the file and other processes stay conflicts, and so does a store
/// write on top of such a change. (To save and enqueue in one transaction, pass `enqueue:`.)
///
/// Operations on one repository take effect one at a time, in the order they were called.
///
/// ```swift
/// struct Book: Codable, Identifiable, Equatable, Sendable {
///     var id: String
///     var title: String
/// }
/// let books = RecordRepository<Book>(store: store, collection: "books")
/// try await books.save(Book(id: "moby-dick", title: "Moby-Dick"))
/// let all = try await books.load()   // sorted by key
/// ```
///
/// For tests and previews, `RecordRepository(store: .inMemory(), collection: …)` is the
/// in-memory repository: the in-memory store runs the same SQLite engine and SQL.
public actor RecordRepository<Item> where Item: Codable & Identifiable & Equatable & Sendable, Item.ID: Codable & Sendable {
    /// The store the records live in.
    public nonisolated let store: RecordStore
    /// The collection holding one record per item.
    public nonisolated let collection: String

    /// The version of the item type this code writes (1 unless given).
    public nonisolated let itemVersion: Int

    /// The version of every record this repository last loaded or saved, by key. A key not
    /// here is expected to be absent.
    var versions = KnownVersions()
    var turns = OperationTurns()
    /// Which coders read and write the payloads (both write the same bytes).
    public nonisolated let coding: RecordCoding.Implementation
    /// How payloads write dates and keys; recorded with the collection.
    public nonisolated let strategies: RecordCoding.Strategies
    /// One encoder and decoder for the repository's life, reusing their buffers across
    /// records: they are used only on the actor.
    let coder: PayloadCoder
    /// Checks the stored item version and migrates older items (see `RecordRepository+ItemVersions`).
    let migrator: ItemMigrator
    /// True once the stored item version was found current (or made current): writes then
    /// only confirm it inside their transaction.
    var isPrepared = false
    /// How a load copies records out of SQLite and shares their decoding between threads
    /// (`LoadWindow`); tests make the windows small.
    var loadWindowLimits = LoadWindow.Limits.standard
    /// The stored JSON path (key strategy applied) of each field `Item` declares for queries,
    /// made by the first query (see `RecordRepository+Queries`).
    var queryPaths: [FieldPath: FieldPath]?
    /// Where the store leaves the versions its own record API writes (see `learnStoreWrites()`).
    let inbox = VersionInbox()
    /// The collection's normalized name, under which `inbox` is registered.
    nonisolated let learnedName: String

    /// Creates a repository for `collection` in `store`, for items of version 1. Does no I/O.
    ///
    /// `coding` chooses the payload coders: ``/RecordKeeperCoding/RecordCoding/Implementation/recordJSON`` (the default,
    /// fast) or ``/RecordKeeperCoding/RecordCoding/Implementation/foundation`` (Foundation's, for types whose `Codable`
    /// code needs it). Both read and write the same bytes, so a collection can switch freely.
    ///
    /// `strategies` chooses how payloads write dates and keys (Foundation's defaults unless
    /// given). They are recorded with the collection by the first write: a repository opened
    /// later with other strategies is refused with ``RepositoryError`` (`codingMismatch`), on
    /// reads and writes alike, so stored items are never misread. To change them, raise the
    /// item version (``init(store:collection:itemVersion:migrations:coding:strategies:)``): the
    /// migration reads every item with the recorded strategies and writes it with the new ones.
    ///
    /// ```swift
    /// let events = RecordRepository<Event>(
    ///     store: store, collection: "events", strategies: .init(dates: .iso8601, keys: .snakeCase))
    /// ```
    public init(
        store: RecordStore, collection: String, coding: RecordCoding.Implementation = .recordJSON,
        strategies: RecordCoding.Strategies = .default
    ) {
        self.init(store: store, collection: collection, itemVersion: 1, migrations: [], coding: coding, strategies: strategies)
    }

    /// Creates a repository for `collection` in `store` whose items have version
    /// `itemVersion`, with the `migrations` that bring older stored items forward. Does no I/O.
    ///
    /// The item version the records were written with is stored with the collection. On the
    /// first access that finds an older version (a collection that never recorded one holds
    /// version 1), the repository migrates every stored item in one transaction: each payload
    /// goes through the steps from its version up to `itemVersion`, is decoded as `Item` and
    /// stored in its ``/RecordKeeperCoding/RecordCoding`` form, and the new version is recorded. All or nothing: a
    /// step that throws, or a migrated item that does not decode, fails the access with
    /// ``RepositoryError`` (`migrationFailed`, naming the key and the step) and nothing is
    /// changed, so a fixed app can try again. Items are never dropped. A collection recorded
    /// with a higher version than `itemVersion` (written by a newer app) is refused with
    /// `newerItemVersion` and left untouched.
    ///
    /// The payload `strategies` are recorded with the item version. At the same item version,
    /// other recorded strategies are refused (`codingMismatch`); a migration from an older
    /// version reads the stored items with the strategies recorded for them (the steps see
    /// that JSON) and writes them with `strategies`, so raising the item version, with steps
    /// or only an identity step (`.data(from: 1) { $0 }`), is how a collection changes them.
    ///
    /// ```swift
    /// struct Book: Codable, Identifiable, Equatable, Sendable {
    ///     var id: String
    ///     var title: String
    ///     var rating: Int        // new in item version 2
    /// }
    /// let books = RecordRepository<Book>(
    ///     store: store, collection: "books", itemVersion: 2,
    ///     migrations: [.json(from: 1) { book in book["rating"] = 0 }])
    /// ```
    /// - Precondition: `itemVersion >= 1`; each step starts at a version from 1 below
    ///   `itemVersion`, and no two steps start at the same version.
    public init(
        store: RecordStore, collection: String, itemVersion: Int, migrations: [ItemMigrationStep],
        coding: RecordCoding.Implementation = .recordJSON, strategies: RecordCoding.Strategies = .default
    ) {
        self.store = store
        self.collection = collection
        self.itemVersion = itemVersion
        self.coding = coding
        self.strategies = strategies
        self.coder = PayloadCoder(coding, strategies: strategies)
        self.migrator = ItemMigrator(
            collection: collection, currentVersion: itemVersion, strategies: strategies,
            steps: ItemMigrator.checkPlan(currentVersion: itemVersion, migrations: migrations),
            makeFinisher: Self.makeFinisher(collection: collection, coding: coding, strategies: strategies))
        self.learnedName = RecordNames.normalized(collection)
        store.learned.register(inbox, for: learnedName)
    }

    deinit {
        store.learned.unregister(inbox, for: learnedName)
    }

    // MARK: Reading

    /// All items, sorted by record key (UTF-8 byte order of the key their ID gives), or `[]`
    /// when the collection was never established.
    ///
    /// Remembers every record's version as the base of later saves, and forgets keys that are
    /// no longer stored. Migrates the collection first if it holds items of an older item
    /// version (see ``init(store:collection:itemVersion:migrations:coding:strategies:)``).
    ///
    /// A large collection (a few thousand items and more) is decoded on several threads while
    /// the store's reader reads on: `Item`'s `init(from:)` may run on more than one thread at
    /// once. The result and the first failure are the same as decoding one record after another.
    /// - Throws: ``RepositoryError`` with code `undecodableRecord` (naming the key) when any
    ///   record does not decode, or `keyMismatch` when a record is stored under a key its
    ///   item's ID does not give; never a shorter list (``loadPartial()`` is the form that
    ///   skips, naming what it skipped). `newerItemVersion`, `migrationFailed` or
    ///   `missingMigrationStep` when the collection's item version is not this code's and cannot
    ///   be made so; nothing was changed. ``RecordStoreError`` when the store cannot be read.
    public func load() async throws -> [Item] {
        await takeTurn()
        defer { turns.release() }
        return try remember(try await currentItems(partial: false) ?? LoadedItems<Item>())
    }

    /// The item with `id`, or nil when it is not stored. Remembers its version (or its
    /// absence) as the base of later saves. Migrates the collection first if it holds older items.
    /// - Throws: ``RepositoryError`` when the record does not decode, or when migrating fails
    ///   or the collection has a newer item version; ``RecordStoreError``.
    public func item(_ id: Item.ID) async throws -> Item? {
        await takeTurn()
        defer { turns.release() }
        let key = try key(for: id)
        guard let record = try await currentRecord(key) else {
            versions[key] = nil
            learnStoreWrites()
            return nil
        }
        let item = try Self.decode(record.data, key: record.key, collection: collection, decoder: coder)
        versions[key] = record.version
        learnStoreWrites()
        return item
    }

    // MARK: Writing

    /// Saves one item (insert or update). See `save(_:onConflict:enqueue:)` for an array.
    public func save(_ item: Item, onConflict policy: ConflictPolicy = .fail, enqueue messages: [OutboxMessage] = []) async throws {
        // Not `save([item], …)`: an array of the generic `Item` (and its iteration) made the
        // runtime look its metadata up on every save, a tenth of a single save's own time.
        await takeTurn()
        defer { turns.release() }
        let queued = try ValidatedMessages(messages, operation: .apply)
        let key = try key(for: item.id)
        try await write([RecordUpsert(key: key, data: try encode(item, key: key))], onConflict: policy, enqueue: queued)
    }

    /// Upserts exactly `items`, in one transaction; items not in the array are left as they
    /// are (removal is ``delete(_:onConflict:enqueue:)``).
    ///
    /// With ``ConflictPolicy/fail`` (the default) the write is based on the versions this
    /// repository last confirmed: a record changed since, or an item never seen that already
    /// exists, makes the whole save throw ``RecordConflict`` and write nothing. Items whose
    /// encoding is unchanged are not rewritten. If an ID appears twice, the later item wins.
    ///
    /// `messages` are queued in the store's outbox in the same transaction: they commit with
    /// the items, or not at all (see ``RecordStore/apply(_:changes:expecting:enqueue:)``).
    ///
    /// ```swift
    /// try await books.save(book, enqueue: [
    ///     OutboxMessage(kind: "book.save", payload: try RecordCoding.encode(book), orderingKey: "book/\(book.id)"),
    /// ])
    /// ```
    /// - Throws: ``RecordConflict``; ``RepositoryError`` (`unencodableValue`) before anything
    ///   is written, or an item-version error as for ``load()``; ``RecordStoreError`` (also for
    ///   a message with an empty kind or a duplicate id). Nothing is written, nothing is
    ///   enqueued and nothing is confirmed when it throws.
    public func save(_ items: [Item], onConflict policy: ConflictPolicy = .fail, enqueue messages: [OutboxMessage] = []) async throws {
        await takeTurn()
        defer { turns.release() }
        guard !items.isEmpty else {
            if !messages.isEmpty { try await store.enqueue(messages) }
            return
        }
        let queued = try ValidatedMessages(messages, operation: .apply)
        var entries: [RecordUpsert] = []
        entries.reserveCapacity(items.count)
        for item in items {
            let key = try key(for: item.id)
            entries.append(RecordUpsert(key: key, data: try encode(item, key: key)))
        }
        try await write(entries, onConflict: policy, enqueue: queued)
    }

    /// The write of a save, its items encoded: during the caller's turn.
    private func write(
        _ entries: [RecordUpsert], onConflict policy: ConflictPolicy, enqueue queued: ValidatedMessages
    ) async throws {
        // Validated and sorted once (a later duplicate ID wins), each upsert with its
        // expectation beside it: no dictionary of the whole save on either side.
        let input = try ValidatedChanges(collection, entries: entries, operation: .apply)
        learnStoreWrites()
        let expectations: [RecordVersion??] =
            switch policy {
            case .fail: input.upserts.map { .some(versions.isEmpty ? nil : versions[$0.key]) }
            case .overwrite: Array(repeating: nil, count: input.upserts.count)
            }
        try await prepareForWriting()
        let written = try await store.applyReturningVersions(
            input, expectations: expectations, checking: { [migrator] in try migrator.run(in: $0) },
            unlessItemVersion: (itemVersion, strategies.recorded), enqueue: queued)
        for (upsert, version) in zip(input.upserts, written) { versions[upsert.key] = version }
    }

    /// Removes the item with `id`, if stored, and says whether it was: deleting an item that
    /// is not stored is not an error; it returns false and removes nothing.
    ///
    /// With ``ConflictPolicy/fail`` the removal is based on the version this repository last
    /// confirmed: if the record changed since (or exists although the repository never saw
    /// it), nothing is removed and it throws ``RecordConflict`` ("Could not delete from
    /// collection …"). An item someone else deleted meanwhile is no conflict: it is gone, as
    /// asked, and this returns false. `messages` are queued in the same transaction, also
    /// when it returns false.
    ///
    /// ```swift
    /// if try await books.delete("moby-dick") == false { print("it was not on the shelf") }
    /// ```
    /// - Returns: true when the item's record was removed.
    /// - Throws: ``RecordConflict``; ``RecordStoreError`` (operation `delete`). Nothing is
    ///   removed and nothing is enqueued when it throws.
    @discardableResult
    public func delete(_ id: Item.ID, onConflict policy: ConflictPolicy = .fail, enqueue messages: [OutboxMessage] = []) async throws -> Bool {
        await takeTurn()
        defer { turns.release() }
        let key = RecordNames.normalized(try key(for: id))
        let queued = try ValidatedMessages(messages, operation: .delete)
        try await prepareForWriting()
        learnStoreWrites()
        let expected: RecordVersion?? = policy == .fail ? .some(versions[key]) : nil
        let removed = try await store.delete(
            collection, key: key, expecting: expected, enqueue: queued,
            checking: { [migrator] in try migrator.run(in: $0) })
        versions[key] = nil
        return removed
    }

    /// Makes `items` the whole content of the collection, in one transaction: records of
    /// items not in `items` are removed. For imports and resets, not for ordinary saves.
    ///
    /// With ``ConflictPolicy/fail`` it writes only if the collection holds exactly the records
    /// this repository last confirmed, at their versions: a record changed, added or removed
    /// by someone else makes it throw ``RecordConflict`` and write nothing. With
    /// ``ConflictPolicy/overwrite`` it replaces whatever is stored. `messages` are queued in
    /// the same transaction.
    /// - Throws: ``RecordConflict``; ``RepositoryError`` (`unencodableValue`); ``RecordStoreError``.
    public func replaceAll(
        with items: [Item], onConflict policy: ConflictPolicy = .fail, enqueue messages: [OutboxMessage] = []
    ) async throws {
        await takeTurn()
        defer { turns.release() }
        let queued = try ValidatedMessages(messages, operation: .replace)
        var values: [String: Data] = [:]
        for item in items {
            let key = try key(for: item.id)
            values[key] = try encode(item, key: key)
        }
        let collection = collection
        let migrator = migrator
        try await prepareForWriting()
        learnStoreWrites()
        let known = versions
        let written = try await store.write(origin: .library, collection: collection) { [values] transaction in
            try migrator.run(in: transaction)
            let stored = try transaction.read(collection) ?? [:]
            let removals = Set(stored.keys).subtracting(values.keys)
            var expected: [String: RecordVersion?] = [:]
            if policy == .fail {
                // Every key stored now, known before, or written must be as last confirmed.
                for key in Set(stored.keys).union(known.keys).union(values.keys) {
                    expected[key] = .some(known[key])
                }
            }
            let written = try transaction.applyReturningVersions(
                collection, changes: RecordChanges(upserts: values, removals: removals), expecting: expected)
            try transaction.context.enqueue(queued)
            return written
        }
        versions = KnownVersions()
        for key in values.keys { versions[key] = written[key] }
    }

    // MARK: Helpers

    private func key(for id: Item.ID) throws -> String {
        do {
            return try RecordKeys.key(for: id)
        } catch {
            throw RepositoryError(
                code: .unencodableValue, collection: collection, underlying: error,
                detail: "the item ID \(id) has no record key")
        }
    }

    private func encode(_ item: Item, key: String) throws -> Data {
        do {
            return try coder.encode(item)
        } catch {
            throw RepositoryError(code: .unencodableValue, collection: collection, key: key, underlying: error)
        }
    }

    /// Decodes one record and checks that its item's ID gives the key it is stored under.
    static func decode(_ data: Data, key: String, collection: String, decoder: PayloadCoder) throws -> Item {
        try checked(key: key, collection: collection) { try decoder.decode(Item.self, from: data) }
    }

    /// `decode(_:key:collection:decoder:)` of borrowed payload bytes.
    static func decode(
        _ payload: UnsafeRawBufferPointer, key: String, collection: String, decoder: PayloadCoder
    ) throws -> Item {
        try checked(key: key, collection: collection) { try decoder.decode(Item.self, fromBytes: payload) }
    }

    /// The item `decode` gives, checked to be stored under its own key.
    private static func checked(key: String, collection: String, _ decode: () throws -> Item) throws -> Item {
        let item: Item
        do {
            item = try decode()
        } catch {
            throw RepositoryError(code: .undecodableRecord, collection: collection, key: key, underlying: error)
        }
        let expected: String
        do {
            expected = try RecordKeys.key(for: item.id)
        } catch {
            throw RepositoryError(
                code: .keyMismatch, collection: collection, key: key, underlying: error,
                detail: "the stored item's ID has no record key")
        }
        // `String`'s == is canonical equivalence, so equal strings have equal NFC forms: only
        // keys that differ by `==` need normalizing to compare.
        guard expected == key || RecordNames.normalized(expected) == RecordNames.normalized(key) else {
            throw RepositoryError(
                code: .keyMismatch, collection: collection, key: key,
                detail: "the stored item's ID gives the key \(RecordStoreError.quoted(expected))")
        }
        return item
    }

    func takeTurn() async {
        if turns.takeIfFree() { return }
        await withCheckedContinuation { turns.enqueue($0) }
    }
}
