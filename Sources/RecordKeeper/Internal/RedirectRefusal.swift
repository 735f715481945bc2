import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Refuses every HTTP redirect of the requests this library sends, so that the answer is the
/// redirect itself (3xx), which callers treat as a failure.
///
/// URLSession follows redirects on its own: a captive portal's `302` to its login page turned
/// an outbox POST into a GET without a body, whose `200` then counted as the operation
/// delivered (it was removed, never sent); FoundationNetworking on Linux also sent the
/// request's headers (a bearer token, the idempotency key) to whatever host `Location` named.
///
/// On Apple platforms a task delegate applies to one request whatever session the app passed.
/// FoundationNetworking asks only the session's delegate (measured with Swift 6.3: a task
/// delegate is never asked), so on Linux a request through a session without a delegate of its
/// own goes through a companion session with the same configuration and this delegate
/// (``refusing(_:)``). A session with the app's own delegate is used as it is, so that its
/// delegate keeps answering the session's challenges: on Linux that delegate then decides
/// about redirects too, and one that does not refuse them in
/// `urlSession(_:task:willPerformHTTPRedirection:newRequest:completionHandler:)` lets the
/// request and its headers go to the redirect's host;
/// ``HTTPClientSupport/send(_:through:afterTimeout:failure:)`` still refuses the answer, which
/// came from another URL, so nothing counts as delivered or pulled.
final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    static let shared = RedirectRefusal()

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    #if canImport(FoundationNetworking)
        /// A session to a base session without a delegate, remembered by base.
        private struct Companion {
            weak var base: URLSession?
            let session: URLSession
        }

        private static let companions = Protected<[ObjectIdentifier: Companion]>([:])

        /// `session` itself when it has a delegate (the app's, which decides), otherwise a
        /// session with a copy of its configuration and this delegate, made once per session.
        static func refusing(_ session: URLSession) -> URLSession {
            guard session.delegate == nil else { return session }
            return companions.withLock { companions in
                let id = ObjectIdentifier(session)
                // Sessions that went away leave their companions: end those at every look-up (an
                // identifier may be reused by a new session, which the `base` check tells apart).
                for (key, companion) in companions where companion.base == nil || companion.base !== session && key == id {
                    companion.session.finishTasksAndInvalidate()
                    companions[key] = nil
                }
                if let known = companions[id] { return known.session }
                let configuration = (session.configuration.copy() as? URLSessionConfiguration) ?? session.configuration
                let companion = URLSession(configuration: configuration, delegate: shared, delegateQueue: nil)
                companions[id] = Companion(base: session, session: companion)
                return companion
            }
        }
    #endif
}
