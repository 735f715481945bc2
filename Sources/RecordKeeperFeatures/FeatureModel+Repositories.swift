public import RecordKeeper

extension FeatureModel {
    /// A model whose content is every item of `repository` (``RecordRepository/load()``).
    ///
    /// ```swift
    /// let model = FeatureModel(repository: books)   // FeatureModel<[Book]>
    /// await model.refresh()
    /// ```
    public convenience init<Item>(repository: RecordRepository<Item>) where Value == [Item] {
        self.init(load: { try await repository.load() })
    }

    /// Refreshes after every change committed to `repository`'s collection through its store
    /// (``RecordRepository/changes()``), until the model is released or ``stopFollowing()``.
    ///
    /// The store reports the commits made through it (by any repository on it, or by the store
    /// itself); a change made through another `RecordStore` instance or by another process
    /// shows at the next ``refresh()``.
    ///
    /// Following starts before this returns: a change committed after it is seen. When the
    /// stream ends with an error (a changed record that does not decode), the model refreshes,
    /// which shows the error in ``state``, and follows a new stream from then on.
    public func follow<Item>(_ repository: RecordRepository<Item>) async {
        let first = await repository.changes()
        follow(RepositoryFollowing(repository: repository, first: first))
    }
}

/// The changes of a repository as one sequence that survives decoding errors: after the
/// repository's stream throws, it yields once (so the model refreshes and shows the error)
/// and goes on with a new stream.
struct RepositoryFollowing<Item>: AsyncSequence, Sendable
where Item: Codable & Identifiable & Equatable & Sendable, Item.ID: Codable & Sendable {
    typealias Element = Void
    let repository: RecordRepository<Item>
    let first: RepositoryChanges<Item>

    func makeAsyncIterator() -> Iterator {
        Iterator(repository: repository, current: first.makeAsyncIterator())
    }

    struct Iterator: AsyncIteratorProtocol {
        let repository: RecordRepository<Item>
        var current: RepositoryChanges<Item>.AsyncIterator

        mutating func next() async -> Void? {
            do {
                guard try await current.next() != nil else { return nil }
                return ()
            } catch {
                // The model's refresh reads the collection again and shows this failure
                // (or the state after it); the error itself is not dropped silently.
                if Task.isCancelled { return nil }
                current = await repository.changes().makeAsyncIterator()
                return ()
            }
        }
    }
}
