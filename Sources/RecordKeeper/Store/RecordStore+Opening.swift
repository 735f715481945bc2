import Foundation

/// One attempt at opening the store, shared by every request that arrives while it runs.
struct OpeningAttempt {
    let id: UInt64
    let task: Task<Void, any Error>
}

extension RecordStore {
    /// Opens the store if it is not open.
    ///
    /// Requests that arrive while an opening runs join it and receive its outcome, failure
    /// included. Only the attempt itself clears `opening`, and only if `opening` is still that
    /// attempt: a waiter resuming late can never clear a newer attempt. After a failure, the
    /// next request starts a new attempt.
    func openIfNeeded() async throws {
        if core.isOpen { return }
        let attempt: OpeningAttempt
        if let current = opening {
            attempt = current
        } else {
            nextAttemptID += 1
            let id = nextAttemptID
            attempt = OpeningAttempt(id: id, task: Task { try await self.runOpening(id) })
            opening = attempt
        }
        openingRequests += 1
        try await attempt.task.value
    }

    /// The body of one opening attempt. The blocking work runs on the store's own executor.
    private func runOpening(_ id: UInt64) async throws {
        do {
            if let openingHook { try await openingHook() }
            let (connection, timings) = try StoreOpener.open(path: path, options: options)
            // Watch first, then read the identity: a change in between is seen by both or
            // makes the first commit check the path.
            let watch = path.flatMap(StorePathWatch.make(path:))
            let identity: StoreFileIdentity? =
                if let path, case .file(let identity) = StoreFileIdentity.lookup(path) { identity } else { nil }
            core.writer.withLock { state in
                state.connection = connection
                state.fileIdentity = identity
                state.pathWatch = identity == nil ? nil : watch
            }
            // The reader may have the file that was at the path before (the writer was closed
            // or found the file replaced): it opens the one the writer opened now.
            core.fileWasReplaced()
            endOpening(id)
            options.eventHandler?(.opened(timings))
        } catch {
            core.fileWasReplaced()
            endOpening(id)
            if let error = error as? RecordStoreError { options.eventHandler?(.openingFailed(error)) }
            throw error
        }
    }

    private func endOpening(_ id: UInt64) {
        if opening?.id == id { opening = nil }
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
