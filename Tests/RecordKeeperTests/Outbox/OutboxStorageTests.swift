import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

/// The outbox is stored with the records: operations commit with the change they describe,
/// or not at all.
@Suite struct OutboxStorageTests {
    @Test(arguments: StoreKind.allCases)
    func `an enqueue inside write commits with the records, in enqueue order`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = message("cart.add-item", "1", key: "cart/ana")
            let second = message("cart.remove-item", "2", key: "cart/ana")
            try await store.write { tx in
                try tx.put("carts", key: "ana", data: Data("{}"))
                try tx.enqueue(first)
                try tx.enqueue(second)
            }
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == [first.id, second.id])
            #expect(pending[0].kind == "cart.add-item" && pending[0].payload == Data("1"))
            #expect(pending[0].orderingKey == "cart/ana" && pending[0].attempts == 0 && pending[0].lastError == nil)
            #expect(pending[0].nextAttemptAt == pending[0].createdAt)
            #expect(try await store.value("carts", key: "ana") == Data("{}"))
            #expect(try await store.outbox.deadLetters().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `apply with enqueue commits the change and the operations together`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var changes = RecordChanges()
            changes["ana"] = Data("v1")
            let ops = [message("a", "1"), message("b", "2", key: "k")]
            try await store.apply("carts", changes: changes, enqueue: ops)
            try await store.enqueue([message("c", "3")])
            #expect(try await store.read("carts") == ["ana": Data("v1")])
            #expect(try await store.outbox.pending().map(\.kind) == ["a", "b", "c"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a failed commit, a thrown body, a bad key or cancellation store neither records nor operations`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let changes = RecordChanges(upserts: ["ana": Data("v1")])
            struct BodyFailed: Error {}

            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) {
                try await store.apply("carts", changes: changes, enqueue: [message("a", "1")])
            }
            await #expect(throws: BodyFailed.self) {
                try await store.write { tx in
                    try tx.apply("carts", changes: changes)
                    try tx.enqueue(message("a", "2"))
                    throw BodyFailed()
                }
            }
            let badKey = RecordChanges(upserts: ["ana": Data("v1"), "": Data("x")])
            let keyError = await #expect(throws: RecordStoreError.self) {
                try await store.apply("carts", changes: badKey, enqueue: [message("a", "3")])
            }
            #expect(keyError?.code == .invalidKey)
            let cancelled = Task {
                try await store.write { tx in
                    try tx.apply("carts", changes: changes)
                    try tx.enqueue(message("a", "4"))
                    withUnsafeCurrentTask { $0?.cancel() }
                }
            }
            await #expect(throws: CancellationError.self) { try await cancelled.value }

            #expect(try await store.read("carts") == nil)
            #expect(try await store.outbox.pending().isEmpty)
            #expect(try await store.collections().isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an empty kind or a duplicate id is an error that writes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let queued = message("a", "1")
            try await store.enqueue([queued])
            let changes = RecordChanges(upserts: ["ana": Data("v1")])

            let empty = await #expect(throws: RecordStoreError.self) {
                try await store.apply("carts", changes: changes, enqueue: [message("", "x")])
            }
            #expect(empty?.code == .invalidArgument)
            #expect(empty?.description.contains("kind") == true)

            let again = await #expect(throws: RecordStoreError.self) {
                try await store.apply("carts", changes: changes, enqueue: [message("b", "2"), queued])
            }
            #expect(again?.code == .invalidArgument)
            #expect(again?.key == queued.id.uuidString)
            #expect(again?.sqliteCode != nil, "SQLite's constraint code is kept")
            #expect(again?.description.contains("\(queued.id.uuidString) is already queued") == true)

            let twice = message("c", "3")
            await #expect(throws: RecordStoreError.self) { try await store.enqueue([twice, twice]) }
            await #expect(throws: RecordStoreError.self) {
                try await store.write { tx in
                    try tx.put("carts", key: "bob", data: Data("v"))
                    try tx.enqueue(twice)
                    try tx.enqueue(twice)
                }
            }

            #expect(try await store.read("carts") == nil)
            #expect(try await store.outbox.pending().map(\.id) == [queued.id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the outbox is not a collection`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.enqueue([message("a", "1")])
            #expect(try await store.collections().isEmpty)
            #expect(try await store.read("outbox") == nil)
            try await store.put("outbox", key: "mine", data: Data("a collection of the app's own"))
            #expect(try await store.collections().map(\.name) == ["outbox"])
            #expect(try await store.outbox.pending().count == 1)
        }
    }

    @Test func `an id is stored as its 16 bytes and read back as the same UUID`() async throws {
        try await withStore(.onDisk) { store, url in
            let id = UUID(uuidString: "0123ABCD-4567-4890-ABCD-EF0123456789")!
            try await store.enqueue([OutboxMessage(id: id, kind: "a", payload: Data("1".utf8))])
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            let stored = try connection.withStatement("SELECT typeof(id), hex(id) FROM outbox") { statement in
                try #require(try statement.step())
                return (statement.string(at: 0), statement.string(at: 1))
            }
            #expect(stored.0 == "blob" && stored.1 == "0123ABCD45674890ABCDEF0123456789", "docs/FORMAT.md, format 2")
            #expect(try await store.outbox.pending().map(\.id) == [id])
        }
    }

    @Test func `a row whose id is not 16 bytes is reported as malformed, not skipped`() async throws {
        try await withStore(.onDisk) { store, url in
            try await store.enqueue([message("a", "1")])
            let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(5))
            try connection.execute("UPDATE outbox SET id = X'0102'")
            let error = await #expect(throws: RecordStoreError.self) { try await store.outbox.pending() }
            #expect(error?.code == .malformedRecord)
            #expect(error?.key == "0102")
        }
    }

    @Test func `pending operations are there after reopening`() async throws {
        try await withStore(.onDisk) { store, url in
            let ops = (0..<3).map { message("a", "\($0)", key: "k") }
            try await store.enqueue(ops)
            await store.close()
            let reopened = RecordStore(url: url)
            #expect(try await reopened.outbox.pending().map(\.id) == ops.map(\.id))
            #expect(try await reopened.info().formatVersion == StoreFormat.currentVersion)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `dead letters are kept until requeued or discarded explicitly`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let clock = TestClock()
            let transport = ScriptedTransport(["bad": [.reject("422 no such item"), .reject("422 still bad")]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock)
            let bad1 = message("bad", "1"), bad2 = message("bad", "2")
            try await store.enqueue([bad1, bad2])
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 0, retried: 0, deadLettered: 2))
            let dead = try await store.outbox.deadLetters()
            #expect(dead.map(\.id) == [bad1.id, bad2.id])
            #expect(Set(dead.compactMap(\.lastError)) == ["422 no such item", "422 still bad"])
            #expect(try await store.outbox.pending().isEmpty)

            try await store.outbox.requeue(bad1.id)
            let requeued = try #require(try await store.outbox.pending().first)
            #expect(requeued.id == bad1.id && requeued.attempts == 0)
            try await store.outbox.discard(bad2.id)
            #expect(try await store.outbox.deadLetters().isEmpty)

            // A pending operation is never discarded, and the error says it is pending.
            let notDead = await #expect(throws: RecordStoreError.self) { try await store.outbox.discard(bad1.id) }
            #expect(notDead?.code == .invalidArgument)
            #expect(notDead?.detail?.contains("still pending") == true, "\(String(describing: notDead))")
            #expect(try await store.outbox.pending().map(\.id) == [bad1.id])
            let unknown = await #expect(throws: RecordStoreError.self) { try await store.outbox.requeue(UUID()) }
            #expect(unknown?.detail?.contains("nor a pending operation") == true, "\(String(describing: unknown))")

            #expect(try await processor.deliverDue().delivered == 1)
            #expect(try await store.outbox.pending().isEmpty)
        }
    }
}

extension OutboxStorageTests {
    @Test func `enqueue through a transaction used after its body returned is misuse`() async throws {
        try await withStore(.inMemory) { store, _ in
            let escaped = EscapedTransaction()
            try await store.write { tx in escaped.transaction = tx }
            let transaction = try #require(escaped.transaction)
            let error = #expect(throws: RecordStoreError.self) {
                try transaction.enqueue(message("a", "1"))
            }
            #expect(error?.code == .misuse && error?.collection == nil)
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test func `a format 9 store counts attempts that never reached the server apart, and the limit counts only the others`()
        async throws
    {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-9.sqlite", into: directory)
            let store = RecordStore(url: url)
            #expect(try await store.info().formatVersion == 9)
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == [FormatNineFixture.offline, FormatNineFixture.fresh])
            #expect(pending.map(\.attempts) == [4, 0])
            #expect(pending.map(\.unreachableAttempts) == [3, 0])
            let dead = try await store.outbox.deadLetters()
            #expect(dead.map(\.id) == [FormatNineFixture.refused])
            #expect(dead.first?.unreachableAttempts == 0)
            #expect(try await store.read("carts") == FormatNineFixture.carts)
            // Of its five attempts now, two reached the server: the limit of 2.
            let clock = TestClock()
            clock.advance(.seconds(2 * 86_400))  // past the fixture's next attempt
            let transport = ScriptedTransport(["cart.update": [.retry("503 busy", after: nil)]])
            let processor = OutboxProcessor.testing(store, transport, clock: clock, policy: RetryPolicy(maximumAttempts: 2))
            #expect(try await processor.deliverDue() == OutboxDeliveryReport(delivered: 1, retried: 0, deadLettered: 1))
            let buried = try #require(try await store.outbox.deadLetters().first { $0.id == FormatNineFixture.offline })
            #expect(buried.lastError?.hasPrefix("2 attempts failed") == true, "\(buried.lastError ?? "")")
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    @Test func `a format 2 store's outbox reads with no unreachable attempts, before and after it migrates to 9`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-2.sqlite", into: directory)
            let store = RecordStore(url: url)
            let before = try await store.outbox.pending()
            #expect(try await store.info().formatVersion == 2, "reading never migrates")
            #expect(before.count == 3 && before.allSatisfy { $0.unreachableAttempts == 0 })
            try await store.put("carts", key: "cid", data: Data("{}".utf8))  // the first write migrates
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await store.outbox.pending() == before)
            #expect(try await store.outbox.deadLetters().map(\.unreachableAttempts) == [0])
        }
    }

}
