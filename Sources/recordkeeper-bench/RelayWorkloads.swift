import Foundation
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// S6/S7: the push and pull of S1/S2 (N records, operations of 1,000 new records, pages of
/// 1,000) and a one-record push round trip, through the relay (an in-process `SyncRelay` on
/// loopback, reached with `HTTPSyncServer`) against the direct `PostgresSyncServer` it wraps,
/// in the same run. "raw" in these rows is the direct server; the ratio is relay / direct.
extension BenchRunner {
    /// One-record pushes timed per repeat for S7.
    static let relayLatencySamples = 300

    /// What S6/S7 and the S6 anatomy start from: the N rows, the upload pushes of them, a raw
    /// connection for the schema, the relay's secret and a token of the space `bench`.
    func relayBenchInputs(conninfo: String) throws -> (
        rows: [RawPostgres.Row], upload: [[SyncOperation]], raw: RawPostgres, secret: [UInt8], token: String
    ) {
        let rows = try SyncBenchData.rows(n: options.n)
        let upload = SyncBenchData.pushes(SyncBenchData.uploadOperations(rows))
        let raw = try RawPostgres(conninfo: conninfo)
        let secret = Array("the bench relay's secret, at least 32 bytes".utf8)
        let token = try JWTSigner(key: .hs256(secret: secret))
            .sign(RelayAccess(space: "bench").claims(expiresAt: Date().timeIntervalSince1970 + 86_400))
        return (rows, upload, raw, secret, token)
    }

    func runRelay(conninfo: String) async throws {
        if ProcessInfo.processInfo.environment["RECORDKEEPER_BENCH_S6_ANATOMY"] == "1" {
            try await runRelayAnatomy(conninfo: conninfo)
            return
        }
        let n = options.n
        let (rows, upload, raw, secret, token) = try relayBenchInputs(conninfo: conninfo)
        log("S6/S7 relay vs direct PostgresSyncServer, N=\(n): \(upload.count) upload pushes, "
            + "\(Self.relayLatencySamples) one-record pushes")

        var samples: [String: [Double]] = [:]
        for repeatIndex in 0..<options.repeats {
            for implementation in [Implementation.raw, .recordKeeper].rotated(by: repeatIndex) {
                try freshSchema(raw)
                // Timed inside, for both: what the PostgreSQL server's calls take, apart from the
                // HTTP, JSON and hops around them.
                let direct = TimedSyncServer(try await syncServer(conninfo: conninfo))
                var serving: HTTPServer?
                let server: any RecordSyncServer
                if implementation == .recordKeeper {
                    var configuration = SyncRelay.Configuration(verifier: JWTVerifier(.init(key: try .hs256(secret: secret))))
                    configuration.log = { _ in }
                    var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
                    http.log = { _ in }
                    let started = try SyncRelay(server: direct, configuration: configuration).serve(http)
                    serving = started
                    let session = URLSessionConfiguration.ephemeral
                    session.timeoutIntervalForRequest = 600
                    let client = HTTPSyncServer(
                        url: URL(string: "http://127.0.0.1:\(started.port)")!, session: URLSession(configuration: session)
                    ) { token }
                    _ = try await client.health()  // the limits, once, untimed
                    server = client
                } else {
                    server = direct
                }
                let key = implementation == .raw ? "direct" : "relay"
                var outcomes: [[SyncOutcome]] = []
                var spent = direct.seconds
                samples["\(key) push", default: []].append(try await measureAsync {
                    outcomes = try await SyncBenchData.pushAll(upload, to: server, space: "bench")
                })
                samples["\(key) push server", default: []].append(direct.seconds - spent)
                spent = direct.seconds
                let applied = outcomes.joined().filter { $0.result.appliedVersion != nil }.count
                guard applied == upload.joined().count else {
                    throw BenchFailure("S6 \(key): \(applied) operations applied, not \(upload.joined().count)")
                }
                var read = 0
                samples["\(key) pull", default: []].append(try await measureAsync {
                    read = try await SyncBenchData.pullAll(from: server, space: "bench")
                })
                samples["\(key) pull server", default: []].append(direct.seconds - spent)
                guard read == n else { throw BenchFailure("S6 \(key): the pull read \(read) records, not \(n)") }
                var latencies: [Double] = []
                for index in 0..<Self.relayLatencySamples {
                    let operation = SyncOperation(
                        device: "bench-latency", sequence: Int64(index + 1),
                        changes: [SyncChange(collection: benchCollection, key: "latency-\(index)",
                                             value: .payload(rows[index % rows.count].payload), base: nil)])
                    latencies.append(try await measureAsync {
                        _ = try await server.push(space: "bench", operations: [operation])
                    })
                }
                samples["\(key) p50", default: []].append(Stats.percentile(latencies, 0.5) * 1e3)
                samples["\(key) p99", default: []].append(Stats.percentile(latencies, 0.99) * 1e3)
                await serving?.shutdown(gracePeriod: .seconds(5))
            }
        }
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
        for (implementation, key) in [(Implementation.raw, "direct"), (.recordKeeper, "relay")] {
            let via = key == "relay" ? "through the relay (HTTPSyncServer, loopback)" : "direct PostgresSyncServer"
            record("S6", variant: "push upload", n: n, implementation, metric: "time_s", samples: samples["\(key) push"] ?? [],
                   note: via)
            record("S6", variant: "pull pages of 1000", n: n, implementation, metric: "time_s",
                   samples: samples["\(key) pull"] ?? [])
            record("S6", variant: "push upload", n: n, implementation, metric: "server_s",
                   samples: samples["\(key) push server"] ?? [], note: "time inside PostgresSyncServer's calls")
            record("S6", variant: "pull pages of 1000", n: n, implementation, metric: "server_s",
                   samples: samples["\(key) pull server"] ?? [])
            record("S7", variant: "1-record push", n: Self.relayLatencySamples, implementation, metric: "p50_ms",
                   samples: samples["\(key) p50"] ?? [], note: via)
            record("S7", variant: "1-record push", n: Self.relayLatencySamples, implementation, metric: "p99_ms",
                   samples: samples["\(key) p99"] ?? [])
        }
    }
}

extension Array {
    fileprivate func rotated(by count: Int) -> [Element] {
        guard !isEmpty else { return self }
        let shift = count % self.count
        return Array(self[shift...] + self[..<shift])
    }
}
