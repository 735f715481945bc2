import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A relay in front of a sync server, served on 127.0.0.1, with tokens to call it.
struct RelayHarness {
    static let secret = Array("the relay tests' shared secret, 32+ bytes".utf8)
    /// The time the verifier sees; tokens are minted around it.
    static let now: TimeInterval = 2_000_000_000

    let http: HTTPServer
    let relay: SyncRelay
    let server: CountingSyncServer
    let lines: LinesCollector

    var base: String { "http://127.0.0.1:\(http.port)" }

    /// A token for `access`, valid for an hour from ``now`` unless told otherwise.
    static func token(
        _ access: RelayAccess, expiresIn: TimeInterval = 3600, extra: [String: JWTJSONValue] = [:]
    ) throws -> String {
        var claims = access.claims(expiresAt: now + expiresIn)
        claims.merge(extra) { $1 }
        return try JWTSigner(key: .hs256(secret: secret)).sign(claims)
    }

    static func token(space: String, readOnly: Bool = false, collections: Set<String>? = nil) throws -> String {
        try token(RelayAccess(space: space, readOnly: readOnly, collections: collections))
    }

    func push(_ operations: [SyncOperation], token: String, space: String? = nil) async throws -> ClientResponse {
        let body = try JSONEncoder().encode(RelayWire.PushRequest(space: space, operations: operations))
        return try await request(
            "POST", base + "/v1/push", headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: body)
    }

    func pull(_ query: String, token: String) async throws -> ClientResponse {
        try await request("GET", base + "/v1/pull?" + query, headers: ["Authorization": "Bearer \(token)"])
    }
}

/// Runs `body` with a relay over `server` (an empty in-memory server by default).
func withRelay<T>(
    server: any RecordSyncServer = InMemorySyncServer(),
    _ configure: (inout SyncRelay.Configuration) -> Void = { _ in },
    _ body: (RelayHarness) async throws -> T
) async throws -> T {
    var verifierConfiguration = JWTVerifier.Configuration(key: try .hs256(secret: RelayHarness.secret))
    verifierConfiguration.now = { Date(timeIntervalSince1970: RelayHarness.now) }
    var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifierConfiguration))
    let lines = LinesCollector()
    configuration.log = { lines.append($0) }
    // Answers read ahead are kept for an hour, not the relay's 30 s: a test starved by the
    // rest of the suite (2 cores, hundreds of tests at once) may ask for the next answer more
    // than 30 s after the one before, and would pull its pages twice. Tests of the keep time
    // set their own.
    configuration.pullAheadKeptFor = .seconds(3600)
    configure(&configuration)
    let counting = CountingSyncServer(server)
    // A server that reads several pages at once is served so, as the relay serves PostgreSQL.
    let served: any RecordSyncServer =
        if let pager = server as? any SyncPagesPulling { CountingPagesServer(counting, pager) } else { counting }
    let relay = SyncRelay(server: served, configuration: configuration)
    var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
    http.log = { lines.append($0) }
    http.relaxedForTests()
    let server = try relay.serve(http)
    let harness = RelayHarness(http: server, relay: relay, server: counting, lines: lines)
    do {
        let result = try await body(harness)
        await server.shutdown(gracePeriod: .seconds(5))
        return result
    } catch {
        await server.shutdown(gracePeriod: .seconds(5))
        throw error
    }
}

/// A sync server that counts the calls that reach it (a refused request must reach none).
final class CountingSyncServer: RecordSyncServer {
    let inner: any RecordSyncServer
    private let counts = Protected((pushes: 0, pulls: 0))
    private let filters = Protected([Set<String>?]())

    init(_ inner: any RecordSyncServer) {
        self.inner = inner
    }

    var calls: (pushes: Int, pulls: Int) { counts.withLock { $0 } }
    /// The collections each pull that reached it named (`nil`: every collection).
    var pulledFilters: [Set<String>?] { filters.withLock { $0 } }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        counts.withLock { $0.pushes += 1 }
        return try await inner.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await pull(space: space, after: cursor, limit: limit, collections: nil)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        counts.withLock { $0.pulls += 1 }
        filters.withLock { $0.append(collections) }
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections)
    }

    /// Counts a read of several pages at once (one pull), for ``CountingPagesServer``.
    func countPull(_ collections: Set<String>?) {
        counts.withLock { $0.pulls += 1 }
        filters.withLock { $0.append(collections) }
    }

    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        counts.withLock { $0.pulls += 1 }
        filters.withLock { $0.append(collections) }
        return try await inner.pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }
}

/// A sync server whose every call fails with `error`.
struct FailingSyncServer: RecordSyncServer {
    let error: SyncError

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] { throw error }
    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage { throw error }
}

extension SyncOperation {
    /// One operation writing `values` (key → text) in `collection`, as new records.
    static func writing(
        _ values: [String: String], in collection: String = "notes", device: String = "phone", sequence: Int64
    ) -> SyncOperation {
        SyncOperation(
            device: device, sequence: sequence,
            changes: values.sorted { $0.key < $1.key }.map { key, value in
                SyncChange(collection: collection, key: key, value: .payload(Data(value.utf8)), base: nil)
            })
    }
}

extension ClientResponse {
    /// The body decoded as `T` with Foundation's decoder (the relay writes with its own).
    func decoded<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: body)
    }

    /// The error body's message.
    var errorMessage: String? {
        struct Body: Decodable {
            struct Detail: Decodable {
                let code: String
                let message: String
            }
            let error: Detail
        }
        return (try? JSONDecoder().decode(Body.self, from: body))?.error.message
    }
}

/// ``CountingSyncServer`` for a server that reads several pages at once: an answer of several
/// pages read at once counts as one pull.
final class CountingPagesServer: RecordSyncServer, SyncPagesPulling {
    let counting: CountingSyncServer
    let pager: any SyncPagesPulling

    init(_ counting: CountingSyncServer, _ pager: any SyncPagesPulling) {
        self.counting = counting
        self.pager = pager
    }

    func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
        try await counting.push(space: space, operations: operations)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
        try await counting.pull(space: space, after: cursor, limit: limit)
    }

    func pull(space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?) async throws -> SyncPage {
        try await counting.pull(space: space, after: cursor, limit: limit, collections: collections)
    }

    func pull(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, wait: Duration
    ) async throws -> SyncPage {
        try await counting.pull(space: space, after: cursor, limit: limit, collections: collections, wait: wait)
    }

    func pullPages(
        space: String, after cursor: SyncCursor, limit: Int, collections: Set<String>?, pages: Int
    ) async throws -> [SyncPage] {
        counting.countPull(collections)
        return try await pager.pullPages(space: space, after: cursor, limit: limit, collections: collections, pages: pages)
    }
}
