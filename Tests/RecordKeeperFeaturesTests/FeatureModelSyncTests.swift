import Foundation
import Observation
import Testing
import RecordKeeper
@testable import RecordKeeperFeatures
import TestHelpers

/// A screen's model follows what continuous sync pulls: another device's change shows up in
/// its content with no refresh asked for.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(3)))
struct FeatureModelSyncTests {
    @Test(arguments: StoreKind.allCases) @MainActor
    func `a screen shows another device's change that continuous sync pulled, without a refresh`(
        kind: StoreKind
    ) async throws {
        try await withTemporaryDirectory { directory in
            let server = InMemorySyncServer()
            let phone = kind.makeStore(at: directory.appendingPathComponent("phone.sqlite"))
            let laptop = kind.makeStore(at: directory.appendingPathComponent("laptop.sqlite"))
            let phoneSync = RecordSync(store: phone, server: server)
            let laptopSync = RecordSync(store: laptop, server: server)
            try await phoneSync.start(space: "alice", collections: ["books"])
            try await laptopSync.start(space: "alice", collections: ["books"])

            let books = RecordRepository<Book>(store: laptop, collection: "books")
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()
            #expect(model.state.content == [])
            let loads = model.loadCount

            var activity = laptopSync.activity().makeAsyncIterator()
            let running = Task { try await laptopSync.keepInSync() }
            while let next = await activity.next() {
                if case .upToDate = next { break }
            }
            // The laptop holds a live pull now (a handshake, not a sleep).
            while await server.heldPulls == 0 { await Task.yield() }

            try await RecordRepository<Book>(store: phone, collection: "books").save(Book(id: "b1", title: "Dune"))
            _ = try await phoneSync.sync()
            await waitUntilObserved { model.state.content == [Book(id: "b1", title: "Dune")] }
            #expect(model.loadCount == loads, "the pulled change was applied to the content; nothing refreshed")

            running.cancel()
            try await running.value
        }
    }
}
