import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Continuous sync (``RecordSync/keepInSync(_:)``): pushes after local commits of any writer,
/// applies live-pulled pages as pulls do, backs off while offline, stops on refusals, and ends
/// cleanly when cancelled. Handshakes: the activity stream and the server's held pulls.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(3)))
struct SyncKeepInSyncTests {
    /// Waits (a handshake on the server's state) until it holds `count` live pulls.
    private func untilHeld(_ server: InMemorySyncServer, _ count: Int) async {
        while await server.heldPulls != count { await Task.yield() }
    }

    private func strings(_ store: RecordStore, _ collection: String) async throws -> [String: String] {
        (try await store.read(collection) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: StoreKind.allCases)
    func `a local commit of another writer of the store is pushed without a call`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("device.sqlite")
            let store = kind.makeStore(at: url)
            // On disk another RecordStore on the file writes (as another process would); in
            // memory only the store itself can.
            let writer = kind == .onDisk ? RecordStore(url: url) : store
            let server = InMemorySyncServer()
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            var activity = sync.activity().makeAsyncIterator()
            let running = Task { try await sync.keepInSync(testOptions()) }
            _ = await activities(&activity, until: isSettled)
            await untilHeld(server, 1)

            try await writer.put("notes", key: "a", data: Data("from the other writer"))
            let round = await activities(&activity, until: isSettled)
            #expect(round.map(activityName) == ["syncing", "upToDate"])
            #expect(report(round.last)?.pushedOperations == 1)
            let page = try await server.pull(space: "s", after: .start, limit: 10)
            #expect(page.changes.map(\.key) == ["a"])
            #expect(page.changes.first?.value == .payload(Data("from the other writer")))
            #expect(try await store.syncStatus()?.pendingOperations == 0)
            running.cancel()
            try await running.value
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a live-pulled change is applied with its cursor in one transaction`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            let server = try #require(b.server as? InMemorySyncServer)
            var activity = b.activity().makeAsyncIterator()
            let running = Task { try await b.keepInSync(testOptions()) }
            _ = await activities(&activity, until: isSettled)
            await untilHeld(server, 1)
            var changes = await stores[1].changes(in: "notes").makeAsyncIterator()

            try await stores[0].put("notes", key: "n", data: Data("from a"))
            let pushed = try await a.sync()
            // The change stream tells of the page's commit: the cursor committed with it.
            let change = await changes.next()
            #expect(change?.upserts.map(\.key) == ["n"])
            #expect(try await stores[1].syncStatus()?.cursor == pushed.cursor)
            let round = await activities(&activity, until: isSettled)
            #expect(round.map(activityName) == ["syncing", "upToDate"])
            #expect(report(round.last)?.pulledChanges == 1)
            #expect(try await strings(stores[1], "notes") == ["n": "from a"])
            running.cancel()
            try await running.value
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `offline it backs off with growing jittered delays and recovers when the server returns`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 1) { stores in
            let server = SwitchableServer()
            // The third backoff brings the server back.
            let sleeps = RecordedSleeps { number in if number == 3 { await server.setDown(false) } }
            let randoms = RandomSequence([0.9, 0.1, 0.5])
            var options = testOptions(sleeps)
            options.random = { randoms.next() }
            let sync = RecordSync(store: stores[0], server: server)
            try await sync.start(space: "s", collections: ["notes"])
            var activity = sync.activity().makeAsyncIterator()
            let running = Task { try await sync.keepInSync(options) }
            var seen = await activities(&activity, until: isSettled)
            await untilHeld(server.inner, 1)

            await server.setDown(true)
            try await stores[0].put("notes", key: "a", data: Data("written offline"))
            seen += await activities(&activity, until: isSettled)
            #expect(seen.map(activityName) == [
                "stopped", "syncing", "upToDate",
                "syncing", "offline(unreachable, 1)", "syncing", "offline(unreachable, 2)",
                "syncing", "offline(unreachable, 3)", "syncing", "upToDate",
            ])
            // Equal jitter: half the base plus the random part of the other half (1 s, 2 s, 4 s).
            #expect(sleeps.recorded == [.milliseconds(950), .milliseconds(1100), .seconds(3)])
            let attempts = seen.compactMap { activity -> Date? in
                if case .offline(_, let next, _) = activity { return next }
                return nil
            }
            let expected = [1_000.95, 1_001.1, 1_003]
            #expect(attempts.count == 3)
            for (attempt, time) in zip(attempts, expected) {
                #expect(abs(attempt.timeIntervalSince1970 - time) < 1e-6, "next attempt at the clock's now plus the delay")
            }
            #expect(report(seen.last)?.pushedOperations == 1, "the queued commit went once the server returned")
            #expect(try await server.inner.pull(space: "s", after: .start, limit: 10).changes.map(\.key) == ["a"])
            running.cancel()
            try await running.value
        }
    }

    @Test func `the backoff doubles to its cap with jitter and honours a longer retry-after`() {
        let backoff = SyncBackoff(initial: .seconds(1), maximum: .seconds(8))
        #expect((1...6).map { backoff.delay(afterFailures: $0, random: 0) } == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4),
        ])
        #expect(backoff.delay(afterFailures: 4, random: 0.999_999) < .seconds(8))
        #expect(backoff.delay(afterFailures: 100, random: 1) == .seconds(8))
    }

    @Test(arguments: StoreKind.allCases)
    func `conflicts make it need attention until resolved`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            try await stores[0].put("notes", key: "today", data: Data("first"))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[0].put("notes", key: "today", data: Data("from a"))
            _ = try await a.sync()
            try await stores[1].put("notes", key: "today", data: Data("from b"))

            var activity = b.activity().makeAsyncIterator()
            let running = Task { try await b.keepInSync(testOptions()) }
            let first = await activities(&activity, until: isSettled)
            guard case .needsAttention(let conflicts, let round)? = first.last else {
                Issue.record("expected needs attention, got \(first.map(activityName))")
                running.cancel()
                return
            }
            #expect(conflicts.map(\.key) == ["today"])
            #expect(conflicts.first?.local == Data("from b"))
            #expect(round.newConflicts.count == 1)

            try await stores[1].resolveSyncConflict("notes", key: "today", keeping: .local)
            let resolved = await activities(&activity, until: isSettled)
            #expect(resolved.map(activityName) == ["syncing", "upToDate"])
            #expect(report(resolved.last)?.pushedOperations == 1)
            _ = try await a.sync()
            #expect(try await strings(stores[0], "notes") == ["today": "from b"])
            running.cancel()
            try await running.value
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `cancelled between pages it stops promptly with the pages applied whole`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let writer = RecordSync(store: stores[0], server: inner)
            try await writer.start(space: "s", collections: ["notes"])
            for start in stride(from: 0, to: 1500, by: 500) {
                try await stores[0].write { transaction in
                    for index in start..<(start + 500) {
                        try transaction.put("notes", key: String(format: "k%04d", index), data: Data("v"))
                    }
                }
            }
            _ = try await writer.sync()

            let (asked, askedContinuation) = AsyncStream.makeStream(of: Void.self)
            let server = StallingSecondPageServer(inner: inner, secondPageAsked: askedContinuation)
            let sync = RecordSync(store: stores[1], server: server)
            try await sync.start(space: "s", collections: ["notes"])
            var activity = sync.activity().makeAsyncIterator()
            var changes = await stores[1].changes(in: "notes").makeAsyncIterator()
            let running = Task { try await sync.keepInSync(testOptions()) }
            var askedIterator = asked.makeAsyncIterator()
            await askedIterator.next()  // the second page was asked for (it never comes)
            _ = await changes.next()  // the first page committed
            running.cancel()
            try await running.value
            _ = await activity.next()  // the activity before it started
            let seen = await activities(&activity, until: { if case .stopped(.none) = $0 { true } else { false } })
            #expect(seen.map(activityName).suffix(2) == ["syncing", "stopped"])

            let held = (try await stores[1].read("notes") ?? [:])
            let cursor = try #require(try await stores[1].syncStatus()).cursor
            #expect(held.count == 1000, "the first page stays applied, whole")
            #expect(cursor == SyncCursor(counter: 2, position: SyncCursor.Position(collection: "notes", key: "k0999")),
                    "the cursor committed with the page")
            let finished = try await RecordSync(store: stores[1], server: inner).sync()
            #expect(finished.cursor.counter == 3)
            #expect((try await stores[1].read("notes") ?? [:]).count == 1500)
        }
    }

    @Test(arguments: [SyncError.Code.unauthorized, .forbidden, .configuration])
    func `a refusal retrying cannot mend stops it without a retry`(code: SyncError.Code) async throws {
        try await withDevices(.inMemory, count: 1) { stores in
            let server = SwitchableServer()
            let sleeps = RecordedSleeps()
            let sync = RecordSync(store: stores[0], server: server)
            try await sync.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "a", data: Data("1"))
            await server.setRefusal(SyncError(code, "test: refused"))
            var activity = sync.activity().makeAsyncIterator()
            let error = await #expect(throws: SyncError.self) { try await sync.keepInSync(testOptions(sleeps)) }
            #expect(error?.code == code)
            let seen = await activities(&activity, until: { if case .stopped(let error) = $0 { error != nil } else { false } })
            #expect(seen.map(activityName) == ["stopped", "syncing", "stopped(\(code.name))"])
            #expect(await server.requests == 1, "one attempt, no retry")
            #expect(sleeps.recorded.isEmpty)
            #expect(try await stores[0].syncStatus()?.pendingOperations == 1, "the change stays queued")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a collection started while it runs is pulled, pushed and followed`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            try await a.start(space: "alice", collections: ["tags"])
            try await stores[0].put("tags", key: "t", data: Data("from a"))
            _ = try await a.sync()
            try await stores[1].put("tags", key: "mine", data: Data("from b"))
            var activity = b.activity().makeAsyncIterator()
            let running = Task { try await b.keepInSync(testOptions()) }
            _ = await activities(&activity, until: isSettled)

            try await b.start(space: "alice", collections: ["tags"])
            let round = await activities(&activity, until: isSettled)
            #expect(report(round.last)?.pushedOperations == 1, "the records it held went up")
            #expect(try await strings(stores[1], "tags") == ["t": "from a", "mine": "from b"])
            try await stores[1].put("tags", key: "later", data: Data("followed"))
            let later = await activities(&activity, until: isSettled)
            #expect(report(later.last)?.pushedOperations == 1)
            _ = try await a.sync()
            #expect(try await strings(stores[0], "tags") == ["t": "from a", "mine": "from b", "later": "followed"])
            running.cancel()
            try await running.value
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a write to a collection just started, made while the round it started pulls, is pushed without another commit`(
        kind: StoreKind
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = kind.makeStore(at: directory.appendingPathComponent("device.sqlite"))
            let inner = InMemorySyncServer()
            let server = HeldPullServer(inner: inner)
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: "s", collections: ["notes"])
            var activity = sync.activity().makeAsyncIterator()
            let running = Task { try await sync.keepInSync(testOptions()) }
            _ = await activities(&activity, until: isSettled)
            await untilHeld(inner, 1)

            // Starting "tags" starts a round; its push has read the queue when its pull is asked.
            server.arm()
            try await sync.start(space: "s", collections: ["tags"])
            var asked = server.asked.makeAsyncIterator()
            await asked.next()
            try await store.put("tags", key: "t", data: Data("written at once"))
            await server.gate.open()
            // The round ends having pushed nothing; following "tags" starts one more, which
            // pushes the write (without it, the write would wait for some other commit).
            let started = await activities(&activity, until: isSettled)
            #expect(report(started.last)?.pushedOperations == 0)
            let followed = await activities(&activity, until: isSettled)
            #expect(report(followed.last)?.pushedOperations == 1)
            #expect(try await store.syncStatus()?.pendingOperations == 0, "the write went up without another commit")
            let page = try await inner.pull(space: "s", after: .start, limit: 10, collections: ["tags"])
            #expect(page.changes.map(\.key) == ["t"])
            running.cancel()
            try await running.value
        }
    }

    @Test func `a second keepInSync of one RecordSync is refused while the first runs`() async throws {
        try await withSyncingDevices(.inMemory, collections: ["notes"]) { _, a, _ in
            var activity = a.activity().makeAsyncIterator()
            let running = Task { try await a.keepInSync(testOptions()) }
            _ = await activities(&activity, until: isSettled)
            let error = await #expect(throws: SyncError.self) { try await a.keepInSync(testOptions()) }
            #expect(error?.code == .invalidRequest)
            running.cancel()
            try await running.value
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `two continuous syncs of one store push each change once and converge`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            let server = try #require(a.server as? InMemorySyncServer)
            let second = RecordSync(store: stores[0], server: server)
            var activityA = a.activity().makeAsyncIterator()
            var activitySecond = second.activity().makeAsyncIterator()
            var activityB = b.activity().makeAsyncIterator()
            let runs = [
                Task { try await a.keepInSync(testOptions()) },
                Task { try await second.keepInSync(testOptions()) },
                Task { try await b.keepInSync(testOptions()) },
            ]
            _ = await activities(&activityA, until: isSettled)
            _ = await activities(&activitySecond, until: isSettled)
            _ = await activities(&activityB, until: isSettled)
            for index in 0..<20 {
                try await stores[0].put("notes", key: "k\(index)", data: Data("\(index)"))
            }
            // Converged when b holds every record and nothing is pending on the first store.
            while (try await stores[1].read("notes") ?? [:]).count < 20 {
                _ = await activities(&activityB, until: isSettled)
            }
            for run in runs { run.cancel() }
            for run in runs { try await run.value }
            #expect(try await stores[0].syncStatus()?.pendingOperations == 0)
            #expect(try await stores[0].syncConflicts().isEmpty)
            let page = try await server.pull(space: "alice", after: .start, limit: 100)
            #expect(page.changes.count == 20)
            #expect(try await strings(stores[1], "notes") == (try await strings(stores[0], "notes")))
        }
    }
}

/// Random numbers from a list, in turn (the last repeats).
final class RandomSequence: @unchecked Sendable {
    // `@unchecked Sendable`: `index` is read and written only under `lock`.
    private let lock = NSLock()
    private let values: [Double]
    private var index = 0

    init(_ values: [Double]) { self.values = values }

    func next() -> Double {
        lock.withLock {
            defer { index += 1 }
            return values[min(index, values.count - 1)]
        }
    }
}
