import Foundation
import Testing
@testable import RecordKeeper

/// Stores already in people's hands must keep opening and reading in every later version.
@Suite struct FormatFixtureTests {
    /// Copies a committed fixture into a fresh directory (opening may migrate or checkpoint).
    private func fixtureCopy(_ name: String, into directory: URL) throws -> URL {
        let source = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        let destination = directory.appendingPathComponent(name)
        try FileManager.default.copyItem(at: source, to: destination)
        return destination
    }

    @Test func `a format 1 store opens and reads as it was written`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let progress = try #require(try await store.read("progress"))
            #expect(progress.count == 4)
            #expect(progress["positions/moby-dick"] == Data(#"{"chapter":13,"offset":120}"#.utf8))
            #expect(progress["vocabulary/café"] == Data(#"{"meaning":"coffee","seen":1}"#.utf8))
            #expect(try await store.read("settings") == [:])
            #expect(try await store.read("never") == nil)
            let notes = try #require(try await store.read("notes"))
            #expect(notes == ["empty": Data(), "binary": Data([0x00, 0xFF, 0x10, 0x80]), "nul\u{0}key": Data("nul".utf8)])
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(2))
            #expect(try await store.record("notes", key: "binary")?.version == RecordVersion(3))
            #expect(try await store.info().formatVersion == StoreFormat.currentVersion, "opening migrated it forward")
            #expect(try await store.integrityCheck() == ["ok"])
            #expect(try await store.outbox.pending().isEmpty)
        }
    }

    @Test func `a format 1 store migrates to format 2 keeping every record`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            let collections = try await store.collections()
            #expect(collections.map(\.name) == ["notes", "progress", "settings"])
            #expect(collections.map(\.recordCount) == [3, 4, 0])
            #expect(try await store.read("progress")?["vocabulary/ballena"] == Data(#"{"meaning":"whale","seen":3}"#.utf8))
            #expect(try await store.info().formatVersion == 2)
            try await store.apply(
                "progress", changes: RecordChanges(upserts: ["positions/moby-dick": Data("{}".utf8)]),
                enqueue: [OutboxMessage(kind: "progress.save", payload: Data("{}".utf8))])
            #expect(try await store.outbox.pending().count == 1)
            #expect(try await store.record("progress", key: "positions/moby-dick")?.version == RecordVersion(3))
        }
    }

    @Test func `a format 2 store opens with its records, pending operations and dead letters`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-2.sqlite", into: directory)
            let store = RecordStore(url: url)
            #expect(try await store.info().formatVersion == 2)
            #expect(try await store.read("carts") == FormatTwoFixture.carts)
            #expect(try await store.collections().map(\.name) == ["carts"])
            let pending = try await store.outbox.pending()
            #expect(pending.map(\.id) == FormatTwoFixture.pending.map(\.id))
            #expect(pending.map(\.payload) == FormatTwoFixture.pending.map(\.payload))
            #expect(pending.map(\.orderingKey) == FormatTwoFixture.pending.map(\.orderingKey))
            #expect(pending.allSatisfy { $0.attempts == 0 && $0.lastError == nil })
            let dead = try #require(try await store.outbox.deadLetters().first)
            #expect(dead.id == FormatTwoFixture.deadLetter.id && dead.kind == "cart.checkout")
            #expect(dead.attempts == 1 && dead.lastError == "422 the cart is empty")
            #expect(try await store.integrityCheck() == ["ok"])
        }
    }

    /// Regenerates `Fixtures/format-2.sqlite` (see Fixtures/README.md): runs only with
    /// `RECORDKEEPER_WRITE_FIXTURE=/path/to/format-2.sqlite swift test --filter FormatFixtureTests`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURE"] != nil))
    func `write the format 2 fixture`() async throws {
        let path = try #require(ProcessInfo.processInfo.environment["RECORDKEEPER_WRITE_FIXTURE"])
        #expect(!FileManager.default.fileExists(atPath: path), "refusing to overwrite \(path)")
        try await FormatTwoFixture.write(to: URL(fileURLWithPath: path))
    }

    @Test func `a format 1 store takes new writes after the versions it holds`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let store = RecordStore(url: url)
            try await store.put("progress", key: "positions/moby-dick", data: Data("{}".utf8))
            let version = try #require(try await store.record("progress", key: "positions/moby-dick")).version
            #expect(version == RecordVersion(3), "an update gives the record its previous version + 1")
            try await store.removeCollection("notes")
            try await store.put("notes", key: "binary", data: Data([1]))
            let recreated = try #require(try await store.record("notes", key: "binary")).version
            #expect(recreated > RecordVersion(3), "a record written again after removal never gets an old version back")
            #expect(try await store.read("progress")?.count == 4)
        }
    }

    @Test func `the migration plan is ordered and ends at the current format`() {
        let versions = StoreFormat.migrations.map(\.version)
        #expect(versions == Array(1...versions.count))
        #expect(StoreFormat.currentVersion == versions.last)
    }
}

/// What `Fixtures/format-2.sqlite` holds, and the program that wrote it.
enum FormatTwoFixture {
    static let carts = [
        "ana": Data(#"{"items":[{"sku":"tea","qty":2}],"version":2}"#.utf8),
        "bob": Data(#"{"items":[],"version":1}"#.utf8),
    ]
    static let pending = [
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, kind: "cart.add-item",
            payload: Data(#"{"sku":"tea","qty":1}"#.utf8), orderingKey: "cart/ana"),
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000002")!, kind: "cart.set-quantity",
            payload: Data(#"{"sku":"tea","qty":2}"#.utf8), orderingKey: "cart/ana"),
        OutboxMessage(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000003")!, kind: "cart.created",
            payload: Data(), orderingKey: nil),
    ]
    static let deadLetter = OutboxMessage(
        id: UUID(uuidString: "00000000-0000-4000-8000-000000000004")!, kind: "cart.checkout",
        payload: Data(#"{"cart":"bob"}"#.utf8), orderingKey: "cart/bob")

    /// Rejects every operation (only the checkout is queued when it runs).
    struct RejectEverything: OutboxTransport {
        func deliver(_ operation: OutboxOperation) async throws {
            throw OutboxDeliveryFailure.permanent("422 the cart is empty")
        }
    }

    static func write(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.put("carts", key: "bob", data: carts["bob"]!)
        try await store.enqueue([deadLetter])
        try await OutboxProcessor(store: store, transport: RejectEverything()).deliverDue()
        try await store.apply(
            "carts", changes: RecordChanges(upserts: ["ana": Data(#"{"items":[{"sku":"tea","qty":1}],"version":1}"#.utf8)]),
            enqueue: [pending[0]])
        try await store.write { tx in
            try tx.put("carts", key: "ana", data: carts["ana"]!)
            try tx.enqueue(pending[1])
            try tx.enqueue(pending[2])
        }
        await store.close()
    }
}
