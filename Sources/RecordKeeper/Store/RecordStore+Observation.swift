import Foundation

extension RecordStore {
    /// What each committed transaction changed in `collection`, in commit order.
    ///
    /// The stream is registered when this returns. It yields once per committed transaction
    /// that changed the collection, with only what actually changed: payloads written unchanged
    /// are left out, a transaction that changed nothing yields nothing, and a rolled-back or
    /// failed write yields nothing. Removing the collection yields the removal of every key.
    /// Changes made by other connections (another process) are not observed. No collection
    /// can have an empty name, so the stream for `""` finishes at once.
    public func changes(in collection: String) -> AsyncStream<RecordChanges> {
        let (stream, continuation) = AsyncStream<RecordChanges>.makeStream()
        guard !collection.isEmpty else {
            continuation.finish()
            return stream
        }
        let name = RecordNames.normalized(collection)
        let id = UUID()
        observers[name, default: [:]][id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(name, id: id) }
        }
        return stream
    }

    private func removeObserver(_ collection: String, id: UUID) {
        observers[collection]?[id] = nil
        if observers[collection]?.isEmpty == true { observers[collection] = nil }
    }

    /// Yields committed changes to the observers of each collection.
    func publish(_ changes: [String: RecordChanges]) {
        for (collection, change) in changes where !change.isEmpty {
            for continuation in observers[collection, default: [:]].values {
                continuation.yield(change)
            }
        }
    }
}
