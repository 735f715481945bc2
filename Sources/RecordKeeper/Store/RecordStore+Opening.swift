import Foundation

/// One attempt at opening the store, shared by every request that arrives while it runs.
struct OpeningAttempt {
    let id: UInt64
    let task: Task<Void, any Error>
}

extension RecordStore {
    /// The open connection, opening the store if needed.
    ///
    /// Requests that arrive while an opening runs join it and receive its outcome, failure
    /// included. Only the attempt itself clears `opening`, and only if `opening` is still that
    /// attempt: a waiter resuming late can never clear a newer attempt. After a failure, the
    /// next request starts a new attempt.
    func openConnection() async throws -> SQLiteConnection {
        while true {
            if let connection { return connection }
            let attempt: OpeningAttempt
            if let current = opening {
                attempt = current
            } else {
                nextAttemptID += 1
                let id = nextAttemptID
                attempt = OpeningAttempt(id: id, task: Task { try await self.runOpening(id) })
                opening = attempt
            }
            try await attempt.task.value
            // Normally open now; if the store was closed meanwhile, open it again.
        }
    }

    /// The body of one opening attempt. The blocking work runs on the store's own executor.
    private func runOpening(_ id: UInt64) async throws {
        do {
            if let openingHook { try await openingHook() }
            let (connection, timings) = try StoreOpener.open(path: path, options: options)
            self.connection = connection
            if let path, case .file(let identity) = StoreFileIdentity.lookup(path) {
                fileIdentity = identity
            } else {
                fileIdentity = nil
            }
            endOpening(id)
            options.eventHandler?(.opened(timings))
        } catch {
            endOpening(id)
            if let error = error as? RecordStoreError { options.eventHandler?(.openingFailed(error)) }
            throw error
        }
    }

    /// Throws `fileReplaced` (and drops the connection, so the next request opens the file now
    /// at the path) when the store file is no longer the one the connection opened: a commit
    /// would go to a deleted or replaced file and be lost.
    private func checkFileIdentity(_ operation: String, collection: String?) throws {
        guard let path, let opened = fileIdentity else { return }
        let current = StoreFileIdentity.lookup(path)
        guard current != .file(opened), current != .unknown else { return }
        connection = nil
        fileIdentity = nil
        throw RecordStoreError(
            code: .fileReplaced, operation: operation, collection: collection, path: path,
            detail: current == .missing ? "the file is gone" : "another file is at the path now")
    }

    private func endOpening(_ id: UInt64) {
        if opening?.id == id { opening = nil }
    }

    // MARK: Requests

    /// Runs one request against the open store, with cancellation checks and tracing.
    func perform<T>(
        _ operation: String, collection: String?, _ body: (RecordEngine) throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let connection = try await openConnection()
        try Task.checkCancellation()
        let engine = RecordEngine(connection: connection, path: path, operation: operation)
        guard let handler = options.eventHandler else { return try body(engine) }
        let start = ContinuousClock.now
        do {
            let result = try body(engine)
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: true))
            return result
        } catch {
            handler(.request(operation: operation, collection: collection, duration: .now - start, succeeded: false))
            throw error
        }
    }

    /// Runs `body` in one immediate write transaction: commit on success; on any error,
    /// cancellation or injected failure, roll back and rethrow so nothing of it persists.
    /// Observers of the changed collections hear about it only after the commit.
    func performWrite<T>(
        _ operation: String, collection: String?, _ body: (WriteContext) throws -> T
    ) async throws -> T {
        let observed = Set(observers.keys)
        let written: (T, [String: RecordChanges])
        do {
            written = try await transaction(operation, collection: collection, observed: observed, body)
        } catch let error as RecordStoreError where error.code == .readOnly {
            // SQLite opens a file it cannot write read-only instead of failing. Drop that
            // connection so the next request opens the file afresh, read-write once it is
            // writable again.
            connection = nil
            fileIdentity = nil
            throw error
        }
        publish(written.1)
        return written.0
    }

    private func transaction<T>(
        _ operation: String, collection: String?, observed: Set<String>, _ body: (WriteContext) throws -> T
    ) async throws -> (T, [String: RecordChanges]) {
        try await perform(operation, collection: collection) {
            engine -> (T, [String: RecordChanges]) in
            try engine.begin(immediate: true)
            let context = WriteContext(engine: engine, observed: observed)
            do {
                let result = try body(context)
                try context.finish()
                try Task.checkCancellation()
                if failNextCommit {
                    failNextCommit = false
                    throw RecordStoreError(
                        code: .injectedFailure, operation: operation, collection: collection, path: path)
                }
                try checkFileIdentity(operation, collection: collection)
                try engine.commit()
                return (result, context.changes)
            } catch {
                do {
                    try engine.rollback(after: error)
                } catch {
                    // The connection's state is unknown: drop it, the next request reopens.
                    self.connection = nil
                    throw error
                }
                throw error
            }
        }
    }
}
