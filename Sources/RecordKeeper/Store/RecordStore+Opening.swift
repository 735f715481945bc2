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
    ///
    /// A request whose task is cancelled while it waits throws `CancellationError` at once; the
    /// opening goes on for the other requests (and for the next one, which finds it done or
    /// joins it).
    ///
    /// - Throws: the attempt's error, or `CancellationError`.
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
        let handoff = ResultHandoff<Void>()
        // At this request's priority, which awaiting the attempt passes on to it.
        Task.detached(priority: Task.currentPriority) { [task = attempt.task] in handoff.finish(await task.result) }
        try await handoff.value()
    }

    /// The body of one opening attempt. The blocking work runs on the store's own executor.
    private func runOpening(_ id: UInt64) async throws {
        do {
            if let openingHook { try await openingHook() }
            if let locationError = core.locationError { throw locationError }
            // The file at the path before it is opened, and after (below): the identity a
            // commit checks must be the file the connection opened, and opening may wait (a
            // migration, the log's set-up) while a restore puts another file at the path.
            let before: StoreFileIdentity? =
                if let path, case .file(let identity) = StoreFileIdentity.lookup(path) { identity } else { nil }
            let (connection, timings) = try StoreOpener.open(path: path, options: options)
            // Watch first, then read the identity: a change in between is seen by both or
            // makes the first commit check the path.
            let watch = path.flatMap(StorePathWatch.make(path:))
            let after = path.map(StoreFileIdentity.lookup)
            let identity: StoreFileIdentity? = if case .file(let identity)? = after { identity } else { nil }
            // A path that cannot be examined now says nothing (commits check it again).
            if let path, let before, after != .unknown, before != identity {
                // Another file came to the path while this one was opened (the connection may
                // be to the one before): nothing is written to either; the next request opens
                // the file at the path then.
                throw RecordStoreError(
                    code: .fileReplaced, operation: .open, path: path,
                    detail: "another file came to the path while the store was being opened")
            }
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
}
