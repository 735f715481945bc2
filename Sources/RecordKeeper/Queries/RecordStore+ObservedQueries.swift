extension RecordStore {
    /// The results of `query` over `collection`, now and after every commit that changes them:
    /// an `AsyncSequence` whose first element is the current page and whose later elements
    /// come only when a commit touched the collection (this store, another `RecordStore` on
    /// the file, another process, the `recordkeeper` tool, a sync pull: whatever
    /// ``changes(in:)`` hears) and the page it gives differs from the last one yielded.
    ///
    /// ```swift
    /// let due = RecordQuery(where: RecordField("dueAt") <= 1_000, orderBy: [RecordField("dueAt").ascending], limit: 20)
    /// for try await page in await store.observe("words", due) {
    ///     show(page.elements)
    /// }
    /// ```
    /// The stream hears commits from the moment this returns, so none between the first read
    /// and the wait is missed. A consumer slower than the commits gets the latest page (older
    /// ones are dropped, never queued). The query runs on the store's read path, never on the
    /// consumer's task. The sequence ends when the consumer stops iterating, and throws the
    /// first error a run of the query throws (``QueryError``, ``RecordStoreError``).
    public func observe(_ collection: String, _ query: RecordQuery) -> AsyncThrowingStream<QueryPage<StoredRecord>, any Error> {
        observing(changes(in: collection)) { [self] in try await self.query(collection, query) }
    }

    /// A stream of `run()`'s answers: one now, then one after each element of `changes` whose
    /// answer differs from the last one yielded.
    nonisolated func observing<T: Sendable & Equatable>(
        _ changes: AsyncStream<RecordChanges>, _ run: @escaping @Sendable () async throws -> T
    ) -> AsyncThrowingStream<T, any Error> {
        let (stream, continuation) = AsyncThrowingStream<T, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            do {
                var last = try await run()
                continuation.yield(last)
                for await _ in changes {
                    let next = try await run()
                    if next != last {
                        continuation.yield(next)
                        last = next
                    }
                }
                continuation.finish()
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

extension RecordRepository where Item: Queryable {
    /// The items of ``query(where:orderBy:limit:after:)`` now and after every commit that
    /// changes them, from any writer (see ``RecordStore/observe(_:_:)``): the typed form a
    /// screen (or a `FeatureModel`) follows.
    ///
    /// ```swift
    /// for try await due in await words.observe(where: Word.dueAt <= .now, orderBy: [Word.dueAt.ascending], limit: 20) {
    ///     show(due)
    /// }
    /// ```
    /// Each run goes through the repository, taking its turn with its other operations.
    ///
    /// **Versions.** An item the repository knows no version of (never loaded, read or saved
    /// through it) becomes known at the version the stream yields, so a screen can save what
    /// it shows. A version the repository knows is never moved on by the stream: another
    /// writer's change arrives by itself, and a save based on a copy read before it still
    /// throws ``RecordConflict`` (read it again, with ``item(_:)``, ``load()`` or
    /// ``query(where:orderBy:limit:after:)``, to base a save on it), as with ``changes()``.
    public func observe(
        where predicate: ItemPredicate<Item>? = nil, orderBy order: [ItemOrder<Item>] = [], limit: Int? = nil
    ) async -> AsyncThrowingStream<[Item], any Error> {
        let changes = await store.changes(in: collection)
        return store.observing(changes) { [self] in
            try await self.query(where: predicate, orderBy: order, limit: limit, after: nil, remembering: .unknownOnly).elements
        }
    }
}
