import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// `GET /v1/pull?…&collections=[…]`: names checked (400 for bad ones, nothing read), the
/// token's collections narrowing a pull that names none, a pull naming others refused, pages cut short ending at
/// a change the token may see, and a device whose relay does not filter (a relay older than
/// `collections=`) still getting only the collections it asked for.
@Suite struct SyncRelayCollectionsTests {
    /// A space "alice" of 30 changes: notes n0…n9, tags t0…t9, private p0…p9, interleaved.
    private func busyServer() async throws -> InMemorySyncServer {
        let inner = InMemorySyncServer()
        var sequence: Int64 = 0
        for i in 0..<10 {
            for collection in ["notes", "tags", "private"] {
                sequence += 1
                _ = try await inner.push(
                    space: "alice",
                    operations: [.writing(["\(collection.prefix(1))\(i)": "v"], in: collection, sequence: sequence)])
            }
        }
        return inner
    }

    private func percentEncoded(_ collections: [String]) -> String {
        let json = String(decoding: try! JSONEncoder().encode(collections), as: UTF8.self)
        return json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test func `a pull names its collections and gets only theirs, the cursor at the space's counter`() async throws {
        try await withRelay(server: try await busyServer()) { relay in
            let token = try RelayHarness.token(space: "alice")
            let response = try await relay.pull("after=0&collections=" + percentEncoded(["tags"]), token: token)
            #expect(response.status == 200)
            let page = try response.decoded(SyncPage.self)
            #expect(page.changes.map(\.key) == (0..<10).map { "t\($0)" })
            #expect(page.cursor == SyncCursor(counter: 30))
            #expect(relay.server.pulledFilters == [["tags"]], "the server filters, not the relay")

            let cut = try await relay.pull("after=0&limit=4&collections=" + percentEncoded(["tags", "notes"]), token: token)
            let cutPage = try cut.decoded(SyncPage.self)
            #expect(cutPage.changes.map(\.key) == ["n0", "t0", "n1", "t1"])
            #expect(cutPage.cursor == SyncCursor(counter: 5, position: .init(collection: "tags", key: "t1")))
            #expect(cut.header(RelayWire.nextCursorHeader) == "after=5&afterCollection=tags&afterKey=t1")
        }
    }

    @Test func `bad collections are 400 naming the problem, and reach no server`() async throws {
        try await withRelay(server: try await busyServer()) { relay in
            let token = try RelayHarness.token(space: "alice")
            let tooMany = (0...SyncPullFilter.maximumCollections).map { "c\($0)" }
            let cases: [(String, String)] = [
                ("notes", "collections must be a JSON array of collection names"),
                ("%7B%7D", "collections must be a JSON array of collection names"),
                (percentEncoded(["notes", ""]), "the collection of the pull is empty"),
                ("%5B%22a%5Cu0000b%22%5D", "the collection of the pull contains a NUL character"),
                ("%5B1%5D", "collections must be a JSON array of collection names"),
                (percentEncoded(tooMany), "a pull names at most \(SyncPullFilter.maximumCollections) collections"),
            ]
            for (value, message) in cases {
                let response = try await relay.pull("after=0&collections=" + value, token: token)
                #expect(response.status == 400, "\(value)")
                #expect(response.errorMessage?.contains(message) == true, "\(value): \(response.errorMessage ?? "")")
            }
            #expect(relay.server.calls.pulls == 0)
        }
    }

    @Test func `with a token's collections, a pull naming others or none is refused, reading nothing`() async throws {
        try await withRelay(server: try await busyServer()) { relay in
            let token = try RelayHarness.token(space: "alice", collections: ["notes", "tags"])
            // A pull naming none (a device syncing more than 100 collections) was answered with
            // the granted ones and the space's cursor: the device missed the others for good.
            let unnamed = try await relay.pull("after=0", token: token)
            #expect(unnamed.status == 403)
            #expect(unnamed.errorMessage?.contains("the pull does not name the ones it syncs") == true, "\(unnamed.errorMessage ?? "-")")
            #expect(relay.server.calls.pulls == 0)
            let asked: [([String]?, [String])] = [
                (["tags"], ["tags"]),
                (["notes", "tags"], ["notes", "tags"]),
            ]
            for (collections, expected) in asked {
                let query = "after=0" + (collections.map { "&collections=" + percentEncoded($0) } ?? "")
                let page = try await relay.pull(query, token: token).decoded(SyncPage.self)
                #expect(Set(page.changes.map(\.collection)) == Set(expected), "\(collections ?? [])")
                #expect(page.cursor == SyncCursor(counter: 30), "the cursor passes what the pull did not ask for")
            }
            // A device syncing a collection the token does not grant would have its cursor moved
            // past that collection's changes, for good: 403, as a push to it is.
            for collections in [["tags", "private"], ["private"], ["notes", "tags", "private"]] {
                let refused = try await relay.pull("after=0&collections=" + percentEncoded(collections), token: token)
                #expect(refused.status == 403, "\(collections)")
                #expect(refused.errorMessage?.contains("does not grant collection(s) 'private'") == true, "\(refused.errorMessage ?? "-")")
            }
            #expect(relay.server.pulledFilters == [["tags"], ["notes", "tags"]], "refused pulls read nothing")

            // A page cut short ends at a change the token may see (the server filtered it),
            // so a device accepts it: the relay used to cut such pages after filtering them.
            let notesOnly = try RelayHarness.token(space: "alice", collections: ["notes"])
            let cut = try await relay.pull("after=0&limit=2&collections=%5B%22notes%22%5D", token: notesOnly).decoded(SyncPage.self)
            #expect(cut.changes.map(\.key) == ["n0", "n1"])
            #expect(cut.cursor == SyncCursor(counter: 4, position: .init(collection: "notes", key: "n1")))
        }
    }

    @Test func `a device pulls only the collections it syncs through the relay, also from one that does not filter`()
        async throws
    {
        for filtering in [true, false] {
            let inner = try await busyServer()
            let served: any RecordSyncServer = filtering ? inner : UnfilteredPulls(inner: inner)
            try await withRelay(server: served, { $0.maxPullLimit = 3 }) { relay in
                let client = HTTPSyncServer(url: URL(string: relay.base)!) { try RelayHarness.token(space: "alice") }
                var cursor = SyncCursor.start
                var keys: [String] = []
                while true {
                    let page = try await client.pull(space: "alice", after: cursor, limit: 1000, collections: ["tags"])
                    #expect(page.changes.allSatisfy { $0.collection == "tags" }, "filtering relay: \(filtering)")
                    if page.hasMore { #expect(page.cursor.position?.key == page.changes.last?.key) }
                    keys += page.changes.map(\.key)
                    cursor = page.cursor
                    if !page.hasMore { break }
                }
                #expect(keys == (0..<10).map { "t\($0)" }, "filtering relay: \(filtering)")
                #expect(cursor == SyncCursor(counter: 30))

                try await withTemporaryDirectory { directory in
                    let store = RecordStore(url: directory.appendingPathComponent("device.sqlite"))
                    let sync = RecordSync(store: store, server: client)
                    try await sync.start(space: "alice", collections: ["tags"])
                    let report = try await sync.sync()
                    #expect(report.pulledChanges == 10)
                    #expect(try await store.read("tags")?.count == 10)
                    #expect(try await store.read("notes") == nil)
                }
            }
        }
    }
}
