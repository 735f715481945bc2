#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking

    /// A URLSession request on Linux that a cancelled caller abandons instead of cancelling.
    ///
    /// swift-corelibs-foundation's `URLSession.data(for:)` can deadlock when its task is
    /// cancelled just as the answer arrives (swift-corelibs-foundation issue 5412, fixed after
    /// Swift 6.3): the cancellation handler cancels the `URLSessionTask` under the task's status
    /// lock while a network thread delivering the answer waits for that lock. Continuous sync
    /// cancels held pulls whenever a local commit comes first, so it met this within seconds
    /// under load (the load test's `--continuous` runs hung). Cancelling through `dataTask`
    /// from another thread instead crashed FoundationNetworking's task registry.
    ///
    /// So on Linux no request is ever cancelled: it runs in a task of its own that nobody
    /// cancels, and a caller whose task is cancelled gets `CancellationError` at once while the
    /// request runs on to its answer or to the session's timeout, and its result is dropped.
    /// The meaning for the caller is the one a cancellation already had: an answer not received
    /// is unknown (a push may have been applied, and is pushed again with the same ids; a pull
    /// changed nothing). An abandoned held pull ends at the server's next push to its space,
    /// usually the one that made continuous sync abandon it, or after its wait.
    ///
    /// Apple platforms keep `data(for:)` with its cancellation (Apple's URLSession has no such
    /// defect).
    enum AbandonableRequest {
        static func data(for request: URLRequest, through session: URLSession) async throws -> (Data, URLResponse) {
            try Task.checkCancellation()
            let handoff = ResultHandoff<(Data, URLResponse)>()
            // Never cancelled: see the type's documentation. An answer before the caller
            // waits is kept by the handoff.
            Task.detached {
                do {
                    handoff.finish(.success(try await session.data(for: request)))
                } catch {
                    handoff.finish(.failure(error))
                }
            }
            return try await handoff.value()
        }
    }
#endif
