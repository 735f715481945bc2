import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// Pulls page by size as well as by count (`SyncPage.payloadBudget`): a space of large records
/// never has `limit` of them read into memory at once, and nothing is skipped or repeated.
@Suite struct SyncPullByteBudgetTests {
    /// A change writing `bytes` bytes to `collection/key`.
    private func sized(_ collection: String, _ key: String, _ bytes: Int) -> SyncChange {
        SyncChange(
            collection: collection, key: key, value: .payload(Data(repeating: UInt8(ascii: "x"), count: bytes)),
            base: nil)
    }

    @Test(arguments: ServerKind.allCases)
    func `a pull of large records stops at its byte budget and pulling on delivers every record once`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make(pullByteBudget: 1000) else { return }
        let space = TestPostgres.space()
        // Ten records of 400 bytes, one per operation (versions 1...10).
        _ = try await server.push(
            space: space, operations: (1...10).map { operation("phone", Int64($0), sized("notes", "n\($0)", 400)) })

        let first = try await server.pull(space: space, after: .start, limit: 100)
        // Earlier bytes 0, 400, 800 are under the budget; the fourth would start at 1,200.
        #expect(first.changes.map(\.key) == ["n1", "n2", "n3"])
        #expect(first.hasMore)
        #expect(first.cursor == SyncCursor(counter: 3, position: .init(collection: "notes", key: "n3")))

        let all = try await server.pullAll(space: space, limit: 100)
        #expect(all.changes.map(\.key) == (1...10).map { "n\($0)" })
        #expect(all.cursor == SyncCursor(counter: 10))
    }

    @Test(arguments: ServerKind.allCases)
    func `a record larger than the budget comes alone and the feed goes on past it`(kind: ServerKind) async throws {
        guard let server = try await kind.make(pullByteBudget: 1000) else { return }
        let space = TestPostgres.space()
        _ = try await server.push(
            space: space,
            operations: [
                operation("phone", 1, sized("notes", "small", 10)),
                operation("phone", 2, sized("notes", "huge", 5000)),
                operation("phone", 3, sized("notes", "after", 10)),
            ])
        // The small one and the huge one that crosses the budget; the next page starts after it.
        let first = try await server.pull(space: space, after: .start, limit: 100)
        #expect(first.changes.map(\.key) == ["small", "huge"])
        #expect(first.hasMore)
        let alone = try await server.pull(
            space: space, after: SyncCursor(counter: 1, position: .init(collection: "notes", key: "small")), limit: 100)
        #expect(alone.changes.map(\.key) == ["huge"])
        #expect(alone.hasMore)
        let rest = try await server.pull(space: space, after: alone.cursor, limit: 100)
        #expect(rest.changes.map(\.key) == ["after"])
        #expect(!rest.hasMore)
        #expect(rest.cursor == SyncCursor(counter: 3))
    }

    @Test(arguments: ServerKind.allCases)
    func `tombstones weigh nothing and a filtered pull counts only the collections it reads`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make(pullByteBudget: 1000) else { return }
        let space = TestPostgres.space()
        var operations: [SyncOperation] = []
        // Version 1: 20 records of 300 bytes in "photos"; versions 2...21: each deleted;
        // versions 22...31: 10 small "tags" interleaved with large "photos" writes.
        operations.append(
            SyncOperation(device: "phone", sequence: 1, changes: (1...20).map { sized("photos", "p\($0)", 300) }))
        for n in 1...20 { operations.append(operation("phone", Int64(1 + n), delete("photos", "p\(n)", base: 1))) }
        for n in 1...10 {
            operations.append(
                SyncOperation(
                    device: "phone", sequence: Int64(21 + n),
                    changes: [sized("photos", "q\(n)", 980), sized("tags", "t\(n)", 50)]))
        }
        _ = try await server.push(space: space, operations: operations)

        // From version 1 on: only tombstones, then the mixed versions; the tombstones add nothing.
        let tombstones = try await server.pull(space: space, after: SyncCursor(counter: 1), limit: 100)
        #expect(tombstones.changes.prefix(20).allSatisfy { $0.value == .tombstone })
        #expect(tombstones.changes.count == 22, "20 tombstones, q1 (980 bytes), and t1, under the budget by 20 bytes")
        // Only "tags": ten of 50 bytes fit, every one in one page.
        let tags = try await server.pull(space: space, after: .start, limit: 100, collections: ["tags"])
        #expect(tags.changes.map(\.key) == (1...10).map { "t\($0)" })
        #expect(!tags.hasMore)
        // Only "photos", from the mixed versions: one 980-byte record and the one that crosses.
        let photos = try await server.pull(space: space, after: SyncCursor(counter: 21), limit: 100, collections: ["photos"])
        #expect(photos.changes.map(\.key) == ["q1", "q2"])
        #expect(photos.hasMore)
    }

    @Test(arguments: ServerKind.allCases)
    func `a read of several pages shares one budget and hands on from where it stopped`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make(pullByteBudget: 1000) else { return }
        let space = TestPostgres.space()
        _ = try await server.push(
            space: space, operations: (1...25).map { operation("phone", Int64($0), sized("notes", "n\($0)", 150)) })

        // Limit 2, up to 10 pages: 7 changes fit (earlier 0…900), so pages of 2, 2, 2 and 1.
        let read = try await server.pullPages(space: space, after: .start, limit: 2, collections: nil, pages: 10)
        #expect(read.map(\.changes.count) == [2, 2, 2, 1])
        #expect(read.map(\.hasMore) == [true, true, true, true])
        #expect(read.last?.cursor == SyncCursor(counter: 7, position: .init(collection: "notes", key: "n7")))
        #expect(read.flatMap(\.changes).payloadBytes - 150 < 1000, "beyond the last change, within the budget")

        // Reads of several pages from each last cursor deliver every record once, in order.
        var cursor = SyncCursor.start
        var keys: [String] = []
        var reads = 0
        while true {
            let pages = try await server.pullPages(space: space, after: cursor, limit: 2, collections: nil, pages: 10)
            reads += 1
            for page in pages { keys += page.changes.map(\.key) }
            cursor = pages[pages.count - 1].cursor
            if !pages[pages.count - 1].hasMore { break }
        }
        #expect(keys == (1...25).map { "n\($0)" })
        #expect(reads == 4, "7 + 7 + 7 + 4 changes")
        #expect(cursor == SyncCursor(counter: 25))
    }

    @Test(arguments: ServerKind.allCases, StoreKind.allCases)
    func `a device syncing large records gets every one through pages cut by size`(
        server kind: ServerKind, store storeKind: StoreKind
    ) async throws {
        guard let server = try await kind.make(pullByteBudget: 2000) else { return }
        let space = TestPostgres.space()
        // Another device wrote 30 records of about 700 bytes: pages of three.
        let text = String(repeating: "y", count: 690)
        _ = try await server.push(
            space: space,
            operations: (1...30).map { n in operation("laptop", Int64(n), put("notes", "n\(n)", "\(text)\(n)", base: nil)) })
        try await withTemporaryDirectory { directory in
            let store = storeKind.makeStore(at: directory.appendingPathComponent("phone.sqlite"))
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: space, collections: ["notes"])
            let report = try await sync.sync()
            #expect(report.pulledChanges == 30)
            let records = try #require(try await store.read("notes"))
            #expect(records.count == 30)
            #expect(records["n17"].map { String(decoding: $0, as: UTF8.self) } == "\(text)17")
        }
    }
}
