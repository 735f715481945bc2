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
        if core.locked({ $0.connection != nil }) { return }
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
            let identity: StoreFileIdentity? =
                if let path, case .file(let identity) = StoreFileIdentity.lookup(path) { identity } else { nil }
            core.locked { state in
                state.connection = connection
                state.fileIdentity = identity
            }
            endOpening(id)
            options.eventHandler?(.opened(timings))
        } catch {
            endOpening(id)
            if let error = error as? RecordStoreError { options.eventHandler?(.openingFailed(error)) }
            throw error
        }
    }

    private func endOpening(_ id: UInt64) {
        if opening?.id == id { opening = nil }
    }

    // MARK: Requests

    /// Runs a request: inline on the caller's thread when `inline` allows it and the store is
    /// open and idle, otherwise on the store's executor after opening it if needed.
    nonisolated(nonsending) func execute<T: Sendable>(
        inline: Bool, _ body: @Sendable (StoreCore, CoreState) throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        if inline {
            let core = core
            let result = core.lockedIfFree { state -> Result<T, any Error>? in
                guard state.connection != nil else { return nil }
                return Result { try body(core, state) }
            }
            if let result = result ?? nil { return try result.get() }
        }
        return try await executeOnExecutor(body)
    }

    private func executeOnExecutor<T: Sendable>(_ body: @Sendable (StoreCore, CoreState) throws -> T) async throws -> T {
        while true {
            try await openIfNeeded()
            try Task.checkCancellation()
            // Normally open now; if the store was closed meanwhile, open it again.
            let result = core.locked { state -> Result<T, any Error>? in
                guard state.connection != nil else { return nil }
                return Result { try body(core, state) }
            }
            if let result { return try result.get() }
        }
    }

    /// Runs one read request.
    nonisolated(nonsending) func perform<T: Sendable>(
        _ operation: StoreOperation, collection: String?, inline: Bool = false,
        _ body: @Sendable (RecordEngine) throws -> T
    ) async throws -> T {
        try await execute(inline: inline) { core, state in
            try core.perform(state, operation, collection: collection, body)
        }
    }

    /// Runs one write transaction (see `StoreCore.performWrite`).
    nonisolated(nonsending) func performWrite<T: Sendable>(
        _ operation: StoreOperation, collection: String?, inline: Bool = false,
        _ body: @Sendable (WriteContext) throws -> T
    ) async throws -> T {
        try await execute(inline: inline) { core, state in
            try core.performWrite(state, operation, collection: collection, body)
        }
    }

    /// Whether a write of `count` records may run inline: only when its commit does not
    /// `fsync` (``Durability/normal``, or in memory) and it is small.
    nonisolated func mayWriteInline(_ count: Int) -> Bool {
        count <= Self.inlineWriteLimit && (path == nil || options.durability == .normal)
    }

    /// The largest write (in records) that may run inline on a caller's thread.
    static let inlineWriteLimit = 32
}
