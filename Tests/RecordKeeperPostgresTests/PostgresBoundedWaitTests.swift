import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A server that stops answering never holds a sync: a stalled backend (SIGSTOP) and a row
/// lock held by someone else end in `unreachable` within the server's timeout, with the store
/// untouched, and cancelling the calling task cancels the statement on the server at once.
/// The tests wait for the server's state through `pg_locks` (no sleeps); the time limit is a
/// hang guard, not a measurement.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct PostgresBoundedWaitTests {
    /// A device synced once on `server`, with one more change pending.
    private func device(_ directory: URL, _ server: PostgresSyncServer, space: String) async throws -> RecordSync {
        let store = RecordStore(url: directory.appendingPathComponent("device.sqlite"))
        let sync = RecordSync(store: store, server: server)
        try await sync.start(space: space, collections: ["notes"])
        try await store.put("notes", key: "synced", data: Data("1".utf8))
        _ = try await sync.sync()
        try await store.put("notes", key: "pending", data: Data("2".utf8))
        return sync
    }

    /// A connection holding the row lock of the space's counter, in an open transaction
    /// (`ROLLBACK` releases it): every push of the space waits for it.
    private func holdCounterLock(of space: String) async throws -> PostgresConnection {
        let holder = try await TestPostgres.connection()
        try await holder.execute("BEGIN")
        try await holder.execute(
            "SELECT counter FROM recordkeeper_sync_spaces WHERE space = $1 FOR UPDATE", [.text(space)])
        return holder
    }

    private func expectUntouched(_ sync: RecordSync, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let notes = try await sync.store.read("notes") ?? [:]
        #expect(notes == ["synced": Data("1".utf8), "pending": Data("2".utf8)], sourceLocation: sourceLocation)
        #expect(try await sync.store.syncStatus()?.pendingOperations == 1, sourceLocation: sourceLocation)
    }

    @Test func `a stopped backend ends in unreachable within the timeout, and the next sync goes through`() async throws {
        try await withTemporaryDirectory { directory in
            let server = try await TestPostgres.server(timeout: .seconds(2))
            let sync = try await device(directory, server, space: TestPostgres.space("stopped"))
            let pid = await server.connection.backendProcessID
            try #require(pid > 0)
            #expect(kill(pid, SIGSTOP) == 0, "the test runs as the server's user or root")
            let error = await #expect(throws: SyncError.self) { _ = try await sync.sync() }
            #expect(kill(pid, SIGCONT) == 0)
            #expect(error?.code == .unreachable)
            #expect(error?.message.contains("did not answer within 2 s") == true, "\(String(describing: error))")
            try await expectUntouched(sync)
            // A new session on the next request.
            let report = try await sync.sync()
            #expect(report.pushedOperations == 1)
            #expect(await server.connection.backendProcessID != pid)
        }
    }

    @Test func `a held row lock ends in unreachable within the timeout, the statement cancelled on the server`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("locked")
            let server = try await TestPostgres.server(timeout: .seconds(2))
            let sync = try await device(directory, server, space: space)
            let pid = await server.connection.backendProcessID
            let holder = try await holdCounterLock(of: space)
            let monitor = try await TestPostgres.connection()
            let error = await #expect(throws: SyncError.self) { _ = try await sync.push() }
            #expect(error?.code == .unreachable)
            try await expectUntouched(sync)
            // The push's statement no longer waits on the server, although the lock is held.
            try await TestPostgres.waitUntil(backend: pid, waitsForLock: false, monitor: monitor)
            try await holder.execute("ROLLBACK")
            #expect(try await sync.sync().pushedOperations == 1)
        }
    }

    @Test func `cancelling the task cancels the running statement on the server`() async throws {
        try await withTemporaryDirectory { directory in
            let space = TestPostgres.space("cancelled")
            // The default timeout: only the cancellation ends this wait.
            let server = try await TestPostgres.server()
            let sync = try await device(directory, server, space: space)
            let pid = await server.connection.backendProcessID
            let holder = try await holdCounterLock(of: space)
            let monitor = try await TestPostgres.connection()
            let push = Task { try await sync.push() }
            try await TestPostgres.waitUntil(backend: pid, waitsForLock: true, monitor: monitor)
            push.cancel()
            let result = await push.result
            #expect(throws: CancellationError.self) { try result.get() }
            // Cancelled on the server while the lock is still held.
            try await TestPostgres.waitUntil(backend: pid, waitsForLock: false, monitor: monitor)
            try await expectUntouched(sync)
            try await holder.execute("ROLLBACK")
            #expect(try await sync.sync().pushedOperations == 1)
        }
    }
}
