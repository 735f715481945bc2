import Foundation
import Testing
@testable import RecordKeeper

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The sessions `HTTPSyncServer` makes for live pulls are the app's session with a longer
/// timeout: same delegate (certificate pinning, private trust), same delegate queue.
@Suite struct LiveSessionsTests {
    final class Pinning: NSObject, URLSessionDelegate {}

    @Test func `a live pull's session keeps the app session's delegate and queue, with the wait added to its timeout`() async throws {
        let delegate = Pinning()
        let queue = OperationQueue()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        let base = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        defer { base.invalidateAndCancel() }
        let live = await LiveSessions().session(extending: base, by: 45)
        #expect(live.delegate === delegate)
        #expect(live.delegateQueue === queue)
        #expect(live.configuration.timeoutIntervalForRequest == 75)
        #expect(base.configuration.timeoutIntervalForRequest == 30)
    }
}
