import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// The device side of the relay: `HTTPSyncServer` under `RecordSync`, against a relay served on
/// loopback over an in-memory server (whose calls are counted: a refused request reaches none).
// Under ThreadSanitizer, in the whole sanitized suite, the in-process relay's handlers wait
// for the cooperative pool behind every other suite and the client's 60 s timeout passed
// (CI, 2026-12-01). `.ci/run` runs it alone under the sanitizer afterwards
// (`RECORDKEEPER_SANITIZER_ALONE=1 scripts/sanitize.sh --filter …`), and the ordinary run
// always runs it.
@Suite(
    .timeLimit(.minutes(10)),
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"))
struct HTTPSyncServerTests {
    private func client(_ relay: RelayHarness, token: String) -> HTTPSyncServer {
        HTTPSyncServer(url: URL(string: relay.base)!) { token }
    }

    private func strings(_ store: RecordStore, _ collection: String) async throws -> [String: String] {
        (try await store.read(collection) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: StoreKind.allCases)
    func `two stores converge through the relay, and a concurrent edit is a reported conflict`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withRelay { relay in
                let server = client(relay, token: try RelayHarness.token(space: "alice"))
                let stores = (0..<2).map { kind.makeStore(at: directory.appendingPathComponent("device-\($0).sqlite")) }
                let syncs = stores.map { RecordSync(store: $0, server: server) }
                for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
                try await stores[0].put("notes", key: "a+b&c", data: Data("from 0".utf8))
                try await stores[1].put("notes", key: "b", data: Data("from 1".utf8))
                for sync in syncs { _ = try await sync.sync() }
                _ = try await syncs[0].sync()
                for store in stores {
                    #expect(try await strings(store, "notes") == ["a+b&c": "from 0", "b": "from 1"])
                }
                try await stores[0].put("notes", key: "b", data: Data("edit 0".utf8))
                try await stores[1].put("notes", key: "b", data: Data("edit 1".utf8))
                #expect(try await syncs[0].sync().newConflicts.isEmpty)
                let second = try await syncs[1].sync()
                #expect(second.newConflicts.map(\.key) == ["b"])
                #expect(try await strings(stores[1], "notes")["b"] == "edit 0", "the server's value, the local one kept aside")
            }
        }
    }

    @Test func `an expired token is unauthorized and another space is forbidden, with nothing read or written`() async throws {
        try await withTemporaryDirectory { directory in
            try await withRelay { relay in
                let store = RecordStore(url: directory.appendingPathComponent("bob.sqlite"))
                let expired = try RelayHarness.token(RelayAccess(space: "alice"), expiresIn: -3600)
                let bob = try RelayHarness.token(space: "bob")
                for (token, code) in [(expired, SyncError.Code.unauthorized), (bob, .forbidden)] {
                    let sync = RecordSync(store: store, server: client(relay, token: token))
                    try await sync.start(space: "alice", collections: ["notes"])
                    try await store.put("notes", key: "today", data: Data("bob's".utf8))
                    let error = await #expect(throws: SyncError.self) { try await sync.sync() }
                    #expect(error?.code == code, "\(String(describing: error))")
                    #expect(try await store.syncStatus()?.pendingOperations == 1, "the store keeps its operation")
                }
                #expect(relay.server.calls == (0, 0))
            }
        }
    }

    @Test func `a store syncing more than 100 collections with a token granting some is refused, and misses nothing`() async throws {
        try await withTemporaryDirectory { directory in
            try await withRelay { relay in
                let names = (1...101).map { "c\($0)" }
                // Another device put one record in each collection.
                let writer = RecordStore(url: directory.appendingPathComponent("writer.sqlite"))
                let full = client(relay, token: try RelayHarness.token(space: "alice"))
                let writing = RecordSync(store: writer, server: full)
                for name in names { try await writer.put(name, key: "k", data: Data(name.utf8)) }
                try await writing.start(space: "alice", collections: names)
                _ = try await writing.sync()
                // This device syncs all 101 (its pulls name none) with a token granting 100.
                let store = RecordStore(url: directory.appendingPathComponent("device.sqlite"))
                let partial = client(relay, token: try RelayHarness.token(space: "alice", collections: Set(names.dropLast())))
                let sync = RecordSync(store: store, server: partial)
                try await sync.start(space: "alice", collections: names)
                let error = await #expect(throws: SyncError.self) { try await sync.sync() }
                #expect(error?.code == .forbidden, "\(String(describing: error))")
                #expect(try await store.read("c1") == nil, "nothing was pulled")
                // Before, it pulled the 100 and moved its cursor past c101's record for good.
                _ = try await RecordSync(store: store, server: full).sync()
                for name in names { #expect(try await store.value(name, key: "k") == Data(name.utf8), "\(name)") }
            }
        }
    }

    @Test func `a password in the relay's URL is never shown in a message`() async throws {
        #expect(HTTPClientSupport.withoutPassword("http://user:pa55word@127.0.0.1:1/sync?x=1") == "http://user:***@127.0.0.1:1/sync?x=1")
        #expect(HTTPClientSupport.withoutPassword("ftp://u:s3cret@x/") == "ftp://u:***@x/")
        #expect(HTTPClientSupport.withoutPassword("http://user@host/a:b@c") == "http://user@host/a:b@c")
        #expect(HTTPClientSupport.withoutPassword("host=/tmp password=p") == "host=/tmp password=p")
        // Nothing listens on port 1: the failure names the URL, without its password.
        let server = HTTPSyncServer(url: URL(string: "http://user:pa55word@127.0.0.1:1")!) { "token" }
        let error = await #expect(throws: SyncError.self) { try await server.health() }
        #expect(error?.message.contains("127.0.0.1:1") == true, "\(String(describing: error))")
        #expect(error?.message.contains("pa55word") == false, "\(String(describing: error))")
    }

    @Test func `after a 401 the token provider is asked again, and a refreshed token is tried once`() async throws {
        try await withTemporaryDirectory { directory in
            try await withRelay { relay in
                let expired = try RelayHarness.token(RelayAccess(space: "alice"), expiresIn: -3600)
                let valid = try RelayHarness.token(space: "alice")
                // An expired token, then a fresh one: the push goes through on the retry.
                let asked = Counter()
                let refreshing = HTTPSyncServer(url: URL(string: relay.base)!) {
                    asked.increment() == 1 ? expired : valid
                }
                let outcomes = try await refreshing.push(space: "alice", operations: [.writing(["today": "milk"], sequence: 1)])
                #expect(outcomes.count == 1)
                #expect(asked.count == 2)
                #expect(relay.server.calls == (1, 0))

                // Two tokens that are both refused: unauthorized after one retry, nothing sent on.
                let store = RecordStore(url: directory.appendingPathComponent("alice.sqlite"))
                let refusedAsked = Counter()
                let refused = HTTPSyncServer(url: URL(string: relay.base)!) {
                    try RelayHarness.token(RelayAccess(space: "alice"), expiresIn: -Double(refusedAsked.increment()) * 60)
                }
                let sync = RecordSync(store: store, server: refused)
                try await sync.start(space: "alice", collections: ["notes"])
                try await store.put("notes", key: "today", data: Data("bread".utf8))
                let error = await #expect(throws: SyncError.self) { try await sync.sync() }
                #expect(error?.code == .unauthorized, "\(String(describing: error))")
                #expect(refusedAsked.count == 2, "asked once more after the 401, not again after the second")
                #expect(try await store.syncStatus()?.pendingOperations == 1, "the store keeps its operation")
                #expect(try await strings(store, "notes") == ["today": "bread"])
                #expect(relay.server.calls == (1, 0), "neither refused request reached the server")

                // The same token again is not sent again: a retry would be refused the same way.
                let sameAsked = Counter()
                let same = HTTPSyncServer(url: URL(string: relay.base)!) { sameAsked.increment(); return expired }
                let unchanged = await #expect(throws: SyncError.self) {
                    _ = try await same.pull(space: "alice", after: .start, limit: 1)
                }
                #expect(unchanged?.code == .unauthorized)
                #expect(sameAsked.count == 2)
            }
        }
    }

    @Test func `a relay whose database does not answer is unreachable, with its Retry-After`() async throws {
        let down = FailingSyncServer(error: SyncError(.unreachable, "the database is down"))
        try await withRelay(server: down) { relay in
            let server = client(relay, token: try RelayHarness.token(space: "alice"))
            let error = await #expect(throws: SyncError.self) {
                _ = try await server.push(space: "alice", operations: [.writing(["today": "milk"], sequence: 1)])
            }
            #expect(error?.code == .unreachable)
            #expect(error?.retryAfter == .seconds(1))
            let pulled = await #expect(throws: SyncError.self) {
                _ = try await server.pull(space: "alice", after: .start, limit: 10)
            }
            #expect(pulled?.code == .unreachable)
        }
    }

    @Test func `nothing listening is unreachable, and a token provider that fails sends nothing`() async throws {
        let nowhere = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(try ClosedPort.shared().port)")!) { "token" }
        let error = await #expect(throws: SyncError.self) { _ = try await nowhere.pull(space: "alice", after: .start, limit: 1) }
        #expect(error?.code == .unreachable)
        try await withRelay { relay in
            struct NoSession: Error {}
            let server = HTTPSyncServer(url: URL(string: relay.base)!) { throw NoSession() }
            let failed = await #expect(throws: SyncError.self) { _ = try await server.pull(space: "alice", after: .start, limit: 1) }
            #expect(failed?.code == .unauthorized)
            #expect(relay.server.calls == (0, 0))
        }
    }

    @Test func `a relay that does not say it carries item versions is refused for them, and nothing is sent`()
        async throws
    {
        // An older relay: its health has no `itemVersions`, and it would drop the field.
        actor Count { var value = 0; func add() { value += 1 } }
        let pushes = Count()
        let health = HTTPRoute(.get, RelayWire.healthPath) { _ in
            HTTPResponse(
                status: 200,
                json: Data(#"{"maxBodyBytes":1000000,"maxPullLimit":1000,"protocolVersion":1,"status":"ok"}"#.utf8))
        }
        let push = HTTPRoute(.post, RelayWire.pushPath) { _ in
            await pushes.add()
            return HTTPResponse(status: 500, text: "not expected")
        }
        try await withServer(routes: [health, push]) { http in
            let server = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(http.port)")!) { "token" }
            var change = SyncChange(collection: "books", key: "m", value: .payload(Data("{}".utf8)), base: nil)
            change.itemVersion = 2
            let error = await #expect(throws: SyncError.self) {
                _ = try await server.push(
                    space: "alice", operations: [SyncOperation(device: "phone", sequence: 1, changes: [change])])
            }
            #expect(error?.code == .configuration)
            #expect(error?.message.contains("does not carry item versions") == true)
            #expect(await pushes.value == 0, "nothing was sent")
        }
    }

    @Test func `a pull answered by a server that is no relay asks whether the URL is a relay's`() async throws {
        // A web server answering every path with a page: a pull's 200 is no pull answer.
        let page = { @Sendable (_: HTTPRequest) async -> HTTPResponse in
            HTTPResponse(status: 200, text: "<html><body>Welcome</body></html>")
        }
        let routes = [HTTPRoute(.get, RelayWire.pullPath, handler: page), HTTPRoute(.get, RelayWire.healthPath, handler: page)]
        try await withServer(routes: routes) { http in
            let server = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(http.port)")!) { "token" }
            let error = await #expect(throws: SyncError.self) {
                _ = try await server.pull(space: "alice", after: .start, limit: 10)
            }
            // Retried (a captive portal's page looks the same), but the message says what to check.
            #expect(error?.code == .serverFailure, "\(String(describing: error))")
            #expect(error?.message.contains("is http://127.0.0.1:\(http.port) the URL of a sync relay?") == true,
                    "\(String(describing: error))")
        }
    }

    @Test func `a redirect is never followed: the pull is unreachable and the token goes nowhere else`() async throws {
        let followed = Protected<[String]>([])
        let redirect = { @Sendable (_: HTTPRequest) async -> HTTPResponse in
            HTTPResponse(status: 302, headers: HTTPHeaders([("Location", "/portal")]), body: Data("moved".utf8))
        }
        let portal = { @Sendable (request: HTTPRequest) async -> HTTPResponse in
            followed.withLock { $0.append(request.headers["Authorization"] ?? "no token") }
            return HTTPResponse(status: 200, text: "<html>portal login</html>")
        }
        let routes = [HTTPRoute(.get, RelayWire.pullPath, handler: redirect), HTTPRoute(.get, "/portal", handler: portal)]
        try await withServer(routes: routes) { http in
            let server = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(http.port)")!) { "secret" }
            let error = await #expect(throws: SyncError.self) {
                _ = try await server.pull(space: "alice", after: .start, limit: 10)
            }
            #expect(error?.code == .unreachable, "\(String(describing: error))")
            #expect(error?.message.contains("HTTP 302 redirects to /portal") == true, "\(String(describing: error))")
            #expect(followed.withLock { $0 }.isEmpty, "the redirect was not followed")
        }
    }

    @Test func `a web server's multi-line error page is quoted on one line`() async throws {
        let page = HTTPRoute(.get, RelayWire.pullPath) { _ in
            HTTPResponse(status: 404, text: "<html>\n<head><title>404 Not Found</title></head>\n<body>\nNot Found\n</body>\n</html>\n")
        }
        try await withServer(routes: [page]) { http in
            let server = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(http.port)")!) { "token" }
            let error = await #expect(throws: SyncError.self) {
                _ = try await server.pull(space: "alice", after: .start, limit: 10)
            }
            #expect(error?.code == .configuration, "\(String(describing: error))")
            #expect(error?.message.contains("\n") == false, "\(String(describing: error))")
            #expect(error?.message.contains("<html> <head><title>404 Not Found</title></head> <body> Not Found") == true)
        }
    }

    @Test func `a push larger than the relay's body limit goes in several requests, in order`() async throws {
        try await withRelay({ $0.maxBodyBytes = 4096 }) { relay in
            let server = client(relay, token: try RelayHarness.token(space: "alice"))
            let text = String(repeating: "x", count: 300)
            let operations = (1...40).map { SyncOperation.writing(["key-\($0)": text], sequence: Int64($0)) }
            let outcomes = try await server.push(space: "alice", operations: operations)
            #expect(outcomes.map(\.operationID) == operations.map(\.id))
            #expect(outcomes.allSatisfy { if case .applied = $0.result { true } else { false } })
            #expect(relay.server.calls.pushes > 3, "split into requests of at most 4096 bytes")
            let page = try await server.pull(space: "alice", after: .start, limit: 100)
            #expect(page.changes.count == 40)

            let huge = SyncOperation.writing(["huge": String(repeating: "y", count: 8000)], sequence: 41)
            let pushes = relay.server.calls.pushes
            let error = await #expect(throws: SyncError.self) { _ = try await server.push(space: "alice", operations: [huge]) }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("cannot be split") == true)
            #expect(error?.message.contains("its operator can raise `recordkeeper-relay serve --max-body`") == true)
            #expect(relay.server.calls.pushes == pushes, "nothing of it was sent")
        }
    }

    @Test func `a page cut inside a commit continues from its position, keys with query characters intact`() async throws {
        try await withRelay { relay in
            let server = client(relay, token: try RelayHarness.token(space: "alice"))
            let keys = ["a b", "a+b", "a&b=c", "ä/%"]
            _ = try await server.push(
                space: "alice", operations: [.writing(Dictionary(uniqueKeysWithValues: keys.map { ($0, "v") }), sequence: 1)])
            var cursor = SyncCursor.start
            var seen: [String] = []
            while true {
                let page = try await server.pull(space: "alice", after: cursor, limit: 1)
                seen += page.changes.map(\.key)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(seen.sorted() == keys.sorted())
        }
    }

    @Test func `a device behind the compaction horizon is told so through the relay and resyncs`() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let inner = InMemorySyncServer(now: { clock.now() })
            try await withRelay(server: inner) { relay in
                let server = client(relay, token: try RelayHarness.token(space: "alice"))
                let stores = (0..<2).map { RecordStore(url: directory.appendingPathComponent("device-\($0).sqlite")) }
                let syncs = stores.map { RecordSync(store: $0, server: server) }
                for sync in syncs { try await sync.start(space: "alice", collections: ["notes"]) }
                try await stores[0].write { tx in
                    for key in ["a", "b", "c"] { try tx.put("notes", key: key, data: Data(key.utf8)) }
                }
                for sync in syncs { _ = try await sync.sync() }
                _ = try await stores[0].delete("notes", key: "a")
                try await stores[1].put("notes", key: "b", data: Data("offline".utf8))
                _ = try await syncs[0].sync()
                clock.advance(days: 40)
                #expect(try await inner.compact(space: "alice", olderThan: .seconds(30 * 86_400)).deletedTombstones == 1)

                // The relay answers 410 with the code, which the client turns back into the error.
                let error = await #expect(throws: SyncError.self) {
                    try await server.pull(space: "alice", after: SyncCursor(counter: 1), limit: 10)
                }
                #expect(error?.code == .behindHorizon)
                let raw = try await relay.pull("after=1", token: try RelayHarness.token(space: "alice"))
                #expect(raw.status == 410)
                #expect(try raw.decoded(RelayWire.ErrorBody.self).error.code == "behindHorizon")
                #expect(try await server.pull(space: "alice", after: .start, limit: 10).horizon == 2)

                let report = try await syncs[1].sync()
                #expect(report.resynced && report.removedAsCompacted == 1)
                _ = try await syncs[0].sync()
                for store in stores { #expect(try await strings(store, "notes") == ["b": "offline", "c": "c"]) }
            }
        }
    }
}
