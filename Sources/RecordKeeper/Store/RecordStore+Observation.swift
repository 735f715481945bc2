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
        let core = core
        core.locked { $0.observers[name, default: [:]][id] = continuation }
        continuation.onTermination = { _ in
            core.locked { state in
                state.observers[name]?[id] = nil
                if state.observers[name]?.isEmpty == true { state.observers[name] = nil }
            }
        }
        return stream
    }

    /// How many change streams observe `collection` (for tests).
    nonisolated func observerCount(_ collection: String) -> Int {
        core.locked { $0.observers[RecordNames.normalized(collection)]?.count ?? 0 }
    }
}
