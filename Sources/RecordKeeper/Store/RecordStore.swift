public import Foundation

/// A store of keyed records in named collections, on an embedded SQLite database.
///
/// Creating a store opens nothing (it only looks whether the path is a symbolic link, which it
/// follows). The first write opens the file (creating it and its
/// directory if needed, and migrating the format); concurrent first writes share that one
/// opening, a failure is thrown to every request that waited on it, and a later request tries
/// again. A file the store
/// cannot read is refused and left as it is: the store never resets, moves or replaces data,
/// and never falls back to an empty or in-memory database.
///
/// Saves are record-level: ``apply(_:changes:expecting:enqueue:)`` writes only the records it
/// names, in one transaction, so a narrow save never erases unrelated records. Replacing a
/// whole collection is the separate, explicit ``replace(_:values:onlyIfAbsent:)``.
///
/// ```swift
/// let store = RecordStore(url: appSupport.appending(path: "records.sqlite"))
/// try await store.put("notes", key: "today", data: Data("Buy milk".utf8))
/// let notes = try await store.read("notes")   // ["today": …]; nil if never established
/// ```
///
/// Reading never changes the file: only the first write creates the file and its directory
/// and migrates the format; reads of a missing file, an empty file or an empty SQLite
/// database answer "no records" and leave it as it was.
///
/// Where requests run (details in <doc:Concurrency>):
/// - Writes, ``write(_:)`` transactions, opening and checkpoints run on the store's own serial
///   executor (a private dispatch queue). Small writes under ``Durability/normal`` may run
///   inline on the caller's executor instead, only when the connection is free and no other
///   connection holds the write lock: such an attempt never waits for a lock there, it goes to
///   the store's executor instead.
/// - Reads outside a write transaction use connections of their own (two at most), beside
///   the writer, and see the last committed state without waiting for a running write
///   transaction or for each other. Point reads (``value(_:key:)``, ``record(_:key:)``) run
///   inline when such a connection is free; other reads run on that connection's own private
///   serial queue.
/// - An in-memory store has one connection: its reads run where its writes run, and wait
///   for a running write transaction.
///
/// So SQLite's blocking calls never hold one of Swift's cooperative threads, and a caller's
/// thread (the main actor's included) never waits for another connection's lock.
public actor RecordStore {
    /// The store file (its URL standardized: `.` and `..` removed), or nil for an in-memory
    /// store.
    public nonisolated var url: URL? { location.map { $0.isFileURL ? $0.standardizedFileURL : $0 } }
    /// The URL the store was created with. Standardizing it at creation (for `url`) cost a
    /// cold open a fifth of a millisecond, the first use of Foundation's path code in a
    /// process; the file is opened by the path as given, which names the same file.
    private nonisolated let location: URL?
    /// The options the store was created with.
    public nonisolated let options: Options

    /// The store's serial executor: its writer's queue.
    nonisolated var executor: DatabaseExecutor { core.executor }
    /// Test seam: runs at the start of every opening attempt (may suspend or throw).
    let openingHook: (@Sendable () async throws -> Void)?

    /// The connections and the state requests share, behind locks (see `StoreCore`).
    nonisolated let core: StoreCore
    /// Delivers the change log to this store's change streams.
    nonisolated let watcher: ChangeWatcher
    /// Wakes outbox processors after a commit that enqueued operations.
    nonisolated let outboxSignal = OutboxSignal()
    /// The repositories on this store that learn the versions its own record API writes.
    nonisolated let learned = LearnedVersions()
    var opening: OpeningAttempt?
    var nextAttemptID: UInt64 = 0
    /// How many requests have waited on an opening attempt (for tests: "all have joined").
    var openingRequests = 0

    /// The serial executor the store's work runs on.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Creates a store for the file at `url`. Opens nothing: the file is opened by the first
    /// request that needs it. When the path is a symbolic link to the store file, the link is
    /// followed once, here, and the store is its target (its side files are beside the target,
    /// where SQLite keeps its own; errors name the target).
    ///
    /// `url` must be a file URL: for any other (`https:`, …) every request throws
    /// ``RecordStoreError/Code/invalidArgument`` (operation `open`) and nothing is created.
    public init(url: URL, options: Options = Options()) {
        self.init(location: url, options: options, openingHook: nil)
    }

    /// A store in a private SQLite in-memory database: the same engine, SQL and behaviour as
    /// a file store, gone when the store is released. For tests and previews.
    ///
    /// One difference: it has a single connection (a second one cannot see a private
    /// in-memory database), so a read issued while a write transaction runs waits for it and
    /// then sees its commit, where a file store answers at once with the state before it.
    public static func inMemory(options: Options = Options()) -> RecordStore {
        RecordStore(location: nil, options: options, openingHook: nil)
    }

    init(location: URL?, options: Options, openingHook: (@Sendable () async throws -> Void)?) {
        self.location = location
        self.options = options
        self.openingHook = openingHook
        // The file a link names, once: its side files are the ones SQLite uses.
        let path = location.map { StoreOpener.followingLinks(Self.filePath(of: $0)) }
        let label = "RecordKeeper.RecordStore \(path ?? "in-memory")"
        let watcher = ChangeWatcher(path: path, options: options)
        self.watcher = watcher
        self.core = StoreCore(
            path: path, options: options, label: label, locationError: location.flatMap(Self.locationError(of:)),
            observers: Self.transactionObservers(path: path, watcher: watcher, outbox: outboxSignal, learned: learned))
        watcher.attach(core)
    }

    deinit {
        watcher.storeReleased()
    }

    /// Why the store cannot be at `url` (it is not a file URL), or nil. Its path alone would
    /// name a local file the URL never meant, so no request may use it.
    private static func locationError(of url: URL) -> RecordStoreError? {
        guard !url.isFileURL else { return nil }
        return RecordStoreError(
            code: .invalidArgument, operation: .open, path: url.absoluteString,
            detail: "the URL is not a file URL; nothing was created")
    }

    /// The file path of `url`, as `url.path` gives it. The first `URL.path` of a process costs
    /// about 0.3 ms (Foundation's percent-decoding builds a `Set<UInt8>`, whose metadata the
    /// runtime builds by looking up `UInt8: Hashable` in every loaded image), half of what raw
    /// SQLite takes to open a file and read a row; the percent-encoded path costs 15 µs, and is
    /// the same string when it has no escape and no trailing slash, which a store file's
    /// path rarely has.
    static func filePath(of url: URL) -> String {
        guard url.isFileURL else { return url.path }
        let encoded = url.path(percentEncoded: true)
        var plain = true
        for byte in encoded.utf8 where byte == UInt8(ascii: "%") {
            plain = false
            break
        }
        if encoded.utf8.count > 1, encoded.utf8.last == UInt8(ascii: "/") { plain = false }
        return plain ? encoded : url.path
    }

    /// The store file's path, built once (`StoreCore` keeps it): `URL.path` builds a new
    /// string on every call, which cost 3–5 % of a single save or point read.
    nonisolated var path: String? { core.path }

    // MARK: Writing

    /// Inserts or overwrites one record, establishing the collection if needed.
    ///
    /// - Throws: ``RecordStoreError`` naming the collection and the key, whichever step of the
    ///   write failed; a failure to open the store (operation ``StoreOperation/open``) names
    ///   the store's path instead, as it concerns every request.
    public nonisolated(nonsending) func put(_ collection: String, key: String, data: Data) async throws {
        let input = try ValidatedChanges(collection, key: key, data: data, operation: .put)
        do {
            try await apply(changes: input, .put)
        } catch var error as RecordStoreError where error.operation == .put && error.key == nil {
            // A failure before the record itself (establishing the collection, the commit)
            // still concerns this one key, in this collection.
            error.key = input.upserts.first?.key
            if error.collection == nil { error.collection = input.collection }
            throw error
        }
    }

    /// Applies a record-level change in one transaction: removes only the named keys, upserts
    /// only the given payloads (skipping those already stored byte-for-byte), and touches no
    /// other record. Establishes the collection, even when the change is empty, but not when it
    /// only removes keys: like ``delete(_:key:ifVersion:)``, removals alone create nothing (no
    /// collection, and no store when there is none yet and no messages are queued), and report
    /// every key as not found.
    ///
    /// With `expected`, the change is conditional: it is applied only if every key named there
    /// still has the stated version, where nil means "must not exist"; otherwise nothing is
    /// written and it throws ``RecordConflict`` naming every conflicting key. Keys changed but
    /// not named in `expected` are written unconditionally. `messages` are queued in the
    /// outbox in the same transaction: the change and the messages commit together, or
    /// neither does.
    ///
    /// ```swift
    /// var changes = RecordChanges()
    /// changes["today"] = Data("Buy milk".utf8)
    /// let applied = try await store.apply("notes", changes: changes)
    /// // Later, only if nobody changed it meanwhile:
    /// changes["today"] = Data("Buy oat milk".utf8)
    /// try await store.apply("notes", changes: changes, expecting: ["today": applied.versions["today"]])
    /// ```
    ///
    /// - Parameters:
    ///   - collection: The collection to change.
    ///   - changes: The records to upsert and the keys to remove.
    ///   - expected: Per key, the version it must still have (nil: must not exist); nil (the
    ///     default) writes unconditionally.
    ///   - messages: Outbox messages to queue with the change (see <doc:TheOutbox>).
    /// - Returns: what became of each named key (added, changed, unchanged, removed, or not
    ///   found for removal) and the version of every upserted key afterwards, counted inside the
    ///   transaction. Every upserted key costs one point lookup for this (a key not named in
    ///   `expected` costs it in a conditional apply too), except a change of a single record,
    ///   which looks it up with its collection, in as many statements as ``put(_:key:data:)``.
    /// - Throws: ``RecordConflict`` when an expectation does not hold; ``RecordStoreError``
    ///   otherwise (a bad key anywhere, an empty message kind, a duplicate message id, a failed
    ///   commit, cancellation). On any failure the transaction is rolled back: nothing of the
    ///   change and none of the messages is stored.
    @discardableResult
    public nonisolated(nonsending) func apply(
        _ collection: String, changes: RecordChanges, expecting expected: [String: RecordVersion?]? = nil,
        enqueue messages: [OutboxMessage] = []
    ) async throws -> AppliedChanges {
        let input = try ValidatedChanges(collection, changes: changes, operation: .apply)
        let expected = try expected.map {
            try ValidatedChanges.normalizedVersions($0, collection: input.collection, operation: .apply)
        }
        let queued = try ValidatedMessages(messages, operation: .apply)
        if input.upserts.isEmpty, !input.removals.isEmpty, queued.messages.isEmpty {
            let isStore = try await performRead(.apply, collection: input.collection) { $0.engine != nil }
            if !isStore {
                return try WriteContext.removalsOnly(
                    fromAbsent: input.collection, removals: input.removals, expecting: expected)
            }
        }
        let inline = mayWriteInline(input.upserts.count + input.removals.count + queued.messages.count)
        return try await performWrite(.apply, collection: input.collection, inline: inline, origin: .recordAPI) {
            context in
            let applied = try context.applyReporting(
                input.collection, upserts: input.upserts, removals: input.removals, expecting: expected)
            try context.enqueue(queued)
            return applied
        }
    }

    private nonisolated(nonsending) func apply(changes: ValidatedChanges, _ operation: StoreOperation) async throws {
        let inline = mayWriteInline(changes.upserts.count + changes.removals.count)
        _ = try await performWrite(operation, collection: changes.collection, inline: inline, origin: .recordAPI) {
            context in
            try context.apply(changes.collection, upserts: changes.upserts, removals: changes.removals)
        }
    }

    /// Replaces the whole content of `collection` with `values`, explicitly: records not in
    /// `values` are removed. Use it for seeding and imports, not for ordinary saves.
    ///
    /// With `onlyIfAbsent` and an established collection, nothing changes.
    /// - Returns: the collection's content after the call.
    @discardableResult
    public nonisolated func replace(
        _ collection: String, values: [String: Data], onlyIfAbsent: Bool = false
    ) async throws -> [String: Data] {
        let input = try ValidatedChanges(collection, values: values, operation: .replace)
        return try await performWrite(.replace, collection: input.collection, origin: .recordAPI) { context in
            if onlyIfAbsent, let existing = try context.engine.records.readAll(input.collection) {
                return existing
            }
            try context.replace(input.collection, values: input.upserts)
            // The stored contents are the input itself unless normalization renamed a key.
            guard input.renamedKeys else { return values }
            return Dictionary(uniqueKeysWithValues: input.upserts.lazy.map { ($0.key, $0.data) })
        }
    }

    /// Removes `collection` and all its records; ``read(_:)`` then returns nil.
    ///
    /// When there is no store yet (no file, an empty file or an empty SQLite database) it does
    /// nothing and creates nothing.
    public nonisolated func removeCollection(_ collection: String) async throws {
        let name = try RecordNames.collection(collection, operation: .removeCollection)
        let isStore = try await performRead(.removeCollection, collection: name) { $0.engine != nil }
        guard isStore else { return }
        try await performWrite(.removeCollection, collection: name, origin: .recordAPI) { try $0.removeCollection(name) }
    }

    /// Makes the next write transaction fail at its commit and roll back: the seam behind
    /// `RecordKeeperTestSupport`'s public `failNextCommitForTesting()`, which is test API and
    /// not part of this module's.
    package nonisolated func failNextCommit() {
        core.writer.withLock { $0.failNextCommit = true }
    }

    /// Runs `body` as one write transaction, which may change any number of collections.
    /// It commits when `body` returns and rolls back when it throws.
    ///
    /// `body` runs on the store's executor (never on the caller's thread); the transaction
    /// object is valid only inside it. Reads by others meanwhile see the state before it.
    /// ```swift
    /// try await store.write { tx in
    ///     try tx.put("orders", key: order.id, data: orderData)
    ///     try tx.put("outbox", key: operationID, data: operationData)
    /// }
    /// ```
    public nonisolated func write<T: Sendable>(_ body: @Sendable (RecordTransaction) throws -> T) async throws -> T {
        try await write(origin: .recordAPI, body)
    }

    /// ``write(_:)`` with its changes coming from `origin`; repositories write with `.library`,
    /// so that other repositories on this store do not learn their versions (they stay
    /// conflicts). `collection`, for a write of one collection (a repository's), is named by
    /// a failure of the transaction as a whole (its commit on a full disk).
    nonisolated func write<T: Sendable>(
        origin: TransactionOrigin, collection: String? = nil, _ body: @Sendable (RecordTransaction) throws -> T
    ) async throws -> T {
        try await performWrite(.write, collection: collection, origin: origin) { context in
            let transaction = RecordTransaction(context: context)
            defer { transaction.invalidate() }
            return try body(transaction)
        }
    }

    /// Runs `body` in one read transaction: everything it reads is one consistent snapshot,
    /// even while other connections write. For exports and reports.
    ///
    /// It never changes the file; when there is no store yet, the snapshot is empty.
    public nonisolated func snapshot<T: Sendable>(_ body: @Sendable (RecordSnapshot) throws -> T) async throws -> T {
        try await performRead(.snapshot, collection: nil) { source in
            guard let engine = source.engine else {
                let snapshot = RecordSnapshot(engine: nil)
                defer { snapshot.invalidate() }
                return try body(snapshot)
            }
            return try engine.readTransaction {
                let snapshot = RecordSnapshot(engine: engine)
                defer { snapshot.invalidate() }
                return try body(snapshot)
            }
        }
    }

    /// Closes the store's connections; the next request opens them again.
    ///
    /// It first runs a truncating checkpoint: every commit is copied into the main file and
    /// the write-ahead log emptied, so once no other connection has the file open, the main
    /// file alone holds the whole store (the `-wal` and `-shm` files are removed). The
    /// checkpoint waits up to the busy timeout for other connections' transactions; if they
    /// keep it from finishing, nothing is lost (the commits stay in the log) and a failure is
    /// reported to ``Options/eventHandler`` as ``RecordStoreEvent/checkpointFailed(_:)``.
    ///
    /// An in-memory store keeps its connection, and so its records, until it is released:
    /// for it `close()` does nothing.
    public func close() async {
        core.close()
        watcher.closeConnection()
    }

    /// For a command that created this store and failed before writing anything (the
    /// `recordkeeper` tool's import): if the store holds no collection, runs `remove`, which
    /// removes the store's files, and closes the store; returns false and leaves everything
    /// as it is when a collection exists (another process wrote to it meanwhile). True, without
    /// running `remove`, when the store was never opened and no file is at its path.
    ///
    /// The store's write lock is held from the check until `remove` returns, so no other
    /// process commits in between: a writer that was waiting for the lock finds the file gone
    /// when it commits (``RecordStoreError/Code/fileReplaced``) instead of committing into a
    /// file about to be removed. The store's connections close without removing or
    /// checkpointing anything at the path, where another store may stand by then.
    /// - Throws: ``RecordStoreError`` when the store cannot be opened or checked, unless the
    ///   file is a blank database (the start a failed opening leaves), which is removed;
    ///   nothing was removed then.
    package func removeIfEmpty(_ remove: @escaping @Sendable () -> Void) async throws -> Bool {
        guard let path else { return false }
        // Never opened and no file: the command failed before creating anything (its opening
        // failed), so there is nothing to check or remove, and opening now would only fail
        // again, or create the file. `remove` is not run: a file another process makes at the
        // path meanwhile is not this command's.
        if !core.isOpen, opening == nil, !FileManager.default.fileExists(atPath: path) { return true }
        watcher.closeConnection()
        do {
            return try await execute(inline: false) { core, state, _ in try core.removeIfEmpty(state, remove) }
        } catch let error as RecordStoreError where error.operation == .open {
            // The writer cannot open the file, as the command's own opening could not (a full
            // disk, the open files limit). A blank database, the start that opening left, holds
            // nothing: removed without the lock, which cannot be had (a writer that opened it
            // meanwhile finds it gone when it commits). Anything else stays, also a blank main
            // file beside a log, whose commits are in the log (a checkpoint that did not run).
            if let header = try StoreOpener.readHeader(path), !header.isBlank { throw error }
            if StoreOpener.hasLog(path) { throw error }
            remove()
            return true
        }
    }

    /// ``close()`` whose checkpoint does not wait for other connections' locks: when another
    /// connection holds one, the checkpoint fails at once (reported as for `close()`; nothing
    /// is lost, the commits stay in the log). For a process about to exit after a request
    /// already waited out the busy timeout (the `recordkeeper` tool), so that it does not wait
    /// a second time.
    package func closeWithoutWaiting() async {
        core.close(waitingForLocks: false)
        watcher.closeConnection()
    }

    /// True when the store may hold data: it is open or opening, or its file exists (or its
    /// URL is unusable: the request then reports that).
    func isPresent() -> Bool {
        if opening != nil || core.isOpen || core.locationError != nil { return true }
        guard let path else { return false }
        return FileManager.default.fileExists(atPath: path)
    }

    // MARK: Requests

    /// Runs a request on the writer: inline on the caller's executor when `inline` allows it,
    /// the writer is open and its lock free, and no other connection holds a lock it needs
    /// (`SerializedConnection.attemptInline`: it never waits); otherwise on the writer's queue
    /// (the store's executor), after opening the store if needed, where it may wait up to the
    /// busy timeout.
    nonisolated(nonsending) func execute<T: Sendable>(
        inline: Bool, _ body: @Sendable (StoreCore, CoreState, _ refuseWaiting: Bool) throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        if inline {
            let core = core
            let attempt = core.writer.attemptInline { state -> T? in
                guard state.connection != nil else { return nil }
                return try body(core, state, true)
            }
            if let result = attempt.result { return try result.get() }
        }
        return try await executeOnExecutor(body)
    }

    /// On the store's executor, which is the writer's queue: the writer's lock is only ever
    /// held briefly by others (inline attempts never wait), so taking it here is the queue's turn.
    private func executeOnExecutor<T: Sendable>(
        _ body: @Sendable (StoreCore, CoreState, _ refuseWaiting: Bool) throws -> T
    ) async throws -> T {
        while true {
            try await openIfNeeded()
            try Task.checkCancellation()
            // Normally open now; if the store was closed meanwhile, open it again.
            let result = core.writer.withLock { state -> Result<T, any Error>? in
                guard state.connection != nil else { return nil }
                return Result { try body(core, state, false) }
            }
            if let result { return try result.get() }
        }
    }

    /// Runs one request on the writer (in memory: every request; on disk: requests that
    /// change the connection, such as test seams).
    nonisolated(nonsending) func perform<T: Sendable>(
        _ operation: StoreOperation, collection: String?, inline: Bool = false,
        _ body: @Sendable (RecordEngine) throws -> T
    ) async throws -> T {
        try await execute(inline: inline) { core, state, refuseWaiting in
            try core.perform(state, operation, collection: collection, refuseWaiting: refuseWaiting, body)
        }
    }

    /// Runs one read request outside any write transaction.
    ///
    /// A file store reads on one of its readers (`ReaderPool`), beside the writer: inline when
    /// `inline` allows it and a reader is open and free and needs no lock another connection
    /// holds; otherwise on a reader's queue. It never opens the writer, so it never creates or
    /// migrates anything. An in-memory store has no readers: it reads on its writer (see
    /// `perform`).
    nonisolated(nonsending) func performRead<T: Sendable>(
        _ operation: StoreOperation, collection: String?, inline: Bool = false,
        _ body: @Sendable (ReadSource) throws -> T
    ) async throws -> T {
        let core = core
        guard let readers = core.readers else {
            return try await perform(operation, collection: collection, inline: inline) { try body(.store($0)) }
        }
        try Task.checkCancellation()
        if inline, let result = readers.attemptInline({ state in
            try core.performRead(state, operation, collection: collection, refuseWaiting: true, body)
        }) {
            return try result.get()
        }
        return try await readers.run { state in
            // Not inline, so it opens the reader when needed and always answers.
            guard let result = try core.performRead(state, operation, collection: collection, body) else {
                throw RecordStoreError(code: .misuse, operation: operation, collection: collection, path: core.path)
            }
            return result
        }
    }

    /// Runs one write transaction (see `StoreCore.performWrite`) whose changes come from
    /// `origin` (see `TransactionOrigin`).
    nonisolated(nonsending) func performWrite<T: Sendable>(
        _ operation: StoreOperation, collection: String?, inline: Bool = false, origin: TransactionOrigin = .library,
        _ body: @Sendable (WriteContext) throws -> T
    ) async throws -> T {
        try await execute(inline: inline) { core, state, refuseWaiting in
            try core.performWrite(
                state, operation, collection: collection, refuseWaiting: refuseWaiting,
                origin: origin, body)
        }
    }

    /// Whether a write of `count` records may run inline: only when its commit does not
    /// `fsync` (``Durability/normal``, or in memory) and it is small.
    nonisolated func mayWriteInline(_ count: Int) -> Bool {
        count <= Self.inlineWriteLimit && core.commitsWithoutSync
    }

    /// The largest write (in records) that may run inline on a caller's thread.
    static let inlineWriteLimit = 32
}
