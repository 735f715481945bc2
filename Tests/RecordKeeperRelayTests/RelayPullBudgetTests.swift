import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// An answer of several pages (`pages=N`) stops at about its payload budget, read at once from
/// a server that reads several pages, or page by page from one that does not: a device
/// catching up on large records never makes the relay hold `limit × pages` of them. With a
/// budget of 4 KiB and records of 1 KiB, the proportions of 4 MiB and 1 MiB records without
/// their weight (tens of megabytes of JSON starved the sanitized suite).
@Suite(.timeLimit(.minutes(10)))
struct RelayPullBudgetTests {
    static let budget = 4 << 10

    /// Ten records of 1 KiB in space "alice", one per version.
    private func fillLarge(_ server: any RecordSyncServer) async throws {
        let payload = Data(repeating: UInt8(ascii: "z"), count: 1 << 10)
        for n in 1...10 {
            _ = try await server.push(
                space: "alice",
                operations: [
                    SyncOperation(
                        device: "phone", sequence: Int64(n),
                        changes: [SyncChange(collection: "photos", key: "p\(n)", value: .payload(payload), base: nil)])
                ])
        }
    }

    /// The pages of an answer, one JSON line each (or the one page of a single-page answer).
    private func pages(of response: ClientResponse) throws -> [SyncPage] {
        try String(decoding: response.body, as: UTF8.self).split(separator: "\n").map {
            try SyncWireJSON.decodePage(Data($0.utf8))
        }
    }

    @Test(arguments: [true, false])
    func `an answer of several pages holds about the budget and pulling on delivers every record`(
        readsSeveralPages: Bool
    ) async throws {
        let inner = InMemorySyncServer(pullByteBudget: Self.budget)
        try await fillLarge(inner)
        // A server that reads several pages at once, or one whose pages the relay pulls one by one.
        let server: any RecordSyncServer = readsSeveralPages ? inner : CountingSyncServer(inner)
        try await withRelay(server: server, { $0.pullPayloadBudget = Self.budget }) { relay in
            let alice = try RelayHarness.token(space: "alice")
            let first = try pages(of: try await relay.pull("after=0&limit=2&pages=10", token: alice))
            // 4 KiB: four records read at once (the fifth would start past the budget), or two
            // pages of two pulled one by one (the answer then holds the budget).
            #expect(first.flatMap(\.changes).map(\.key) == ["p1", "p2", "p3", "p4"])
            #expect(first.map(\.changes.count) == [2, 2])
            #expect(first.last?.hasMore == true)

            let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
            var cursor = SyncCursor.start
            var keys: [String] = []
            var largest = 0
            while true {
                let page = try await client.pull(space: "alice", after: cursor, limit: 1000)
                keys += page.changes.map(\.key)
                largest = max(largest, page.changes.count)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(keys == (1...10).map { "p\($0)" })
            #expect(largest == 4, "a page of limit 1,000 stops at the budget")
            #expect(cursor == SyncCursor(counter: 10))
        }
    }
}
