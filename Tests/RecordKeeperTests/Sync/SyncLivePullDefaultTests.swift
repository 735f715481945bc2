import Foundation
import Testing
@testable import RecordKeeper

/// The protocol's default live pull, for servers that cannot hold a request: it answers at
/// once when there are changes or nothing to wait for, and refuses a wait out of range.
@Suite struct SyncLivePullDefaultTests {
    private func serverWithOneChange() async throws -> UnfilteringServer {
        let inner = InMemorySyncServer()
        _ = try await inner.push(
            space: "s",
            operations: [
                SyncOperation(
                    device: "d", sequence: 1,
                    changes: [SyncChange(collection: "notes", key: "k", value: .payload(Data("v")), base: nil)])
            ])
        return UnfilteringServer(inner: inner)
    }

    @Test func `a live pull with changes after the cursor answers them at once`() async throws {
        let server = try await serverWithOneChange()
        let page = try await server.pull(space: "s", after: .start, limit: 10, collections: nil, wait: .seconds(300))
        #expect(page.changes.map(\.key) == ["k"])
        #expect(page.cursor == SyncCursor(counter: 1))
    }

    @Test func `a live pull that may not wait answers an empty page with the cursor`() async throws {
        let server = try await serverWithOneChange()
        let page = try await server.pull(
            space: "s", after: SyncCursor(counter: 1), limit: 10, collections: ["notes"], wait: .zero)
        #expect(page.changes.isEmpty)
        #expect(page.cursor == SyncCursor(counter: 1))
        #expect(!page.hasMore)
    }

    @Test(arguments: [Duration.milliseconds(-1), SyncPage.maximumWait + .seconds(1)])
    func `a wait out of range is refused before anything is read`(wait: Duration) async throws {
        let server = try await serverWithOneChange()
        let error = await #expect(throws: SyncError.self) {
            _ = try await server.pull(space: "s", after: .start, limit: 10, collections: nil, wait: wait)
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("a live pull waits from 0") == true, "\(error?.message ?? "")")
    }

    @Test func `a waiting default live pull ends when its task is cancelled`() async throws {
        let server = try await serverWithOneChange()
        let task = Task {
            try await server.pull(space: "s", after: SyncCursor(counter: 1), limit: 10, collections: nil, wait: .seconds(300))
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }
}
