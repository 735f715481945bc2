import Foundation
import HarnessSupport
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay
import RecordKeeperSync

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where the relay pull's time goes (docs/PERFORMANCE.md, S6/S7): with
/// `RECORDKEEPER_BENCH_S6_ANATOMY=1`, S6 runs this instead of its rows. The N records are
/// pushed once; then, alternating in each repeat, the same 100,000 changes are pulled
///
/// - `direct`: straight from `PostgresSyncServer`, pages of 1,000;
/// - `client`: through the relay with `HTTPSyncServer` (what S6 times);
/// - `urlsession relay`: the relay's answers fetched with plain `URLSession.data(for:)`
///   (same URLs, same token, one after the other, not decoded);
/// - `curl relay`: the same URLs with the `curl` command (one process, one connection; its
///   own `time_total` per transfer, summed);
/// - `urlsession static` and `curl static`: the same answer bytes served from memory by the
///   relay's HTTP server (libmicrohttpd), no PostgreSQL and no relay work;
/// - `decode`: `SyncWireJSON.decodePage` of every page of those bytes; `encode`: the relay
///   writing them (`SyncWireJSON.encode`).
///
/// It prints medians and the bytes per change on the wire; it records no rows.
extension BenchRunner {
    func runRelayAnatomy(conninfo: String) async throws {
        let (_, upload, raw, secret, token) = try relayBenchInputs(conninfo: conninfo)
        try freshSchema(raw)
        let connection = try await PostgresConnection(conninfo: conninfo)
        try await connection.execute("SET search_path TO recordkeeper_bench", operation: "use the bench schema")
        let backend = await connection.backendProcessID
        let direct = TimedSyncServer(try await PostgresSyncServer(connection: connection))
        _ = try await SyncBenchData.pushAll(upload, to: direct, space: "bench")

        var configuration = SyncRelay.Configuration(verifier: JWTVerifier(.init(key: try .hs256(secret: secret))))
        configuration.log = { _ in }
        var http = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        http.log = { _ in }
        let relay = try SyncRelay(server: direct, configuration: configuration).serve(http)
        let base = "http://127.0.0.1:\(relay.port)"
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = 600
        let session = URLSession(configuration: sessionConfiguration)
        let client = HTTPSyncServer(url: URL(string: base)!, session: session) { token }
        _ = try await client.health()

        // The answers, as the client asks for them (pages=16, following the next-cursor header).
        var queries: [String] = []
        var bodies: [Data] = []
        var headers: [[String: String]] = []
        var after = "after=0"
        while true {
            let query = after + "&limit=1000&space=bench&pages=\(RelayWire.maximumPagesPerAnswer)"
            var request = URLRequest(url: URL(string: base + RelayWire.pullPath + "?" + query)!)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse, http.statusCode == 200 else { throw BenchFailure("pull failed") }
            queries.append(query)
            bodies.append(data)
            var kept: [String: String] = ["Content-Type": "application/x-ndjson"]
            if let pages = http.value(forHTTPHeaderField: RelayWire.pagesHeader) { kept[RelayWire.pagesHeader] = pages }
            headers.append(kept)
            guard let next = http.value(forHTTPHeaderField: RelayWire.nextCursorHeader) else { break }
            after = next
        }
        let pages = try bodies.flatMap { body in try Self.lines(body).map { try SyncWireJSON.decodePage($0) } }
        let changes = pages.reduce(0) { $0 + $1.changes.count }
        let bytes = bodies.reduce(0) { $0 + $1.count }
        let payloadBytes = pages.reduce(0) { $0 + $1.changes.payloadBytes }
        log("anatomy: \(bodies.count) answers, \(pages.count) pages, \(changes) changes, \(bytes) bytes on the wire "
            + "(\(bytes / max(1, changes)) a change; payloads \(payloadBytes / max(1, changes)) bytes a change before base64)")

        let payloads: [Data] = pages.flatMap { page in
            page.changes.compactMap { change -> Data? in
                if case .payload(let data) = change.value { return data }
                return nil
            }
        }
        let encodedPayloads = payloads.map { $0.base64EncodedString() }
        let encodedBytes = encodedPayloads.map { Array($0.utf8) }
        // The same bytes from memory.
        let staticBodies = bodies
        let staticHeaders = headers
        var staticHTTP = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        staticHTTP.log = { _ in }
        let staticServer = try HTTPServer(configuration: staticHTTP, routes: [
            HTTPRoute(.get, "/static") { request in
                let index = Int(request.query["i"] ?? "") ?? 0
                var response = HTTPResponse(status: 200, body: staticBodies[index])
                for (name, value) in staticHeaders[index] { response.headers.set(name, value) }
                return response
            }
        ])
        let relayURLs = queries.map { base + RelayWire.pullPath + "?" + $0 }
        let staticURLs = bodies.indices.map { "http://127.0.0.1:\(staticServer.port)/static?i=\($0)" }

        var samples: [String: [Double]] = [:]
        let only = ProcessInfo.processInfo.environment["RECORDKEEPER_BENCH_S6_ONLY"]
        let variants: [String] = ["direct", "client", "urlsession relay", "curl relay", "urlsession static", "curl static", "decode",
                        "encode", "base64 encode", "base64 decode", "wire base64 encode", "wire base64 decode", "strings"].filter { only == nil || $0 == only }
        for repeatIndex in 0..<options.repeats {
            for variant in variants.rotatedForAnatomy(by: repeatIndex) {
                let time: Double
                let spent = direct.seconds
                let (cpu, backendCPU) = (Self.processCPU(), Self.backendCPU(backend))
                defer {
                    samples[variant + " server", default: []].append(direct.seconds - spent)
                    samples[variant + " cpu", default: []].append(Self.processCPU() - cpu)
                    samples[variant + " pg cpu", default: []].append(Self.backendCPU(backend) - backendCPU)
                }
                switch variant {
                case "direct":
                    time = try await measureAsync { _ = try await SyncBenchData.pullAll(from: direct, space: "bench") }
                case "client":
                    time = try await measureAsync { _ = try await SyncBenchData.pullAll(from: client, space: "bench") }
                case "urlsession relay", "urlsession static":
                    let urls = variant == "urlsession relay" ? relayURLs : staticURLs
                    time = try await measureAsync {
                        for url in urls {
                            var request = URLRequest(url: URL(string: url)!)
                            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                            _ = try await session.data(for: request)
                        }
                    }
                case "curl relay", "curl static":
                    time = try curlTime(variant == "curl relay" ? relayURLs : staticURLs, token: token)
                case "decode":
                    time = try await measureAsync {
                        for body in bodies {
                            for line in Self.lines(body) { _ = try SyncWireJSON.decodePage(line) }
                        }
                    }
                case "base64 encode":
                    time = await measureAsync {
                        for data in payloads { _ = data.base64EncodedData() }
                    }
                case "base64 decode":
                    time = await measureAsync {
                        for text in encodedPayloads { _ = Data(base64Encoded: text) }
                    }
                case "wire base64 encode":
                    time = await measureAsync {
                        var out: [UInt8] = []
                        out.reserveCapacity(payloads.count * 140)
                        for data in payloads { StrictBase64.append(data, to: &out) }
                    }
                case "wire base64 decode":
                    time = await measureAsync {
                        for text in encodedBytes { _ = text.withUnsafeBufferPointer { StrictBase64.decode($0) } }
                    }
                case "strings":
                    time = await measureAsync {
                        for text in encodedPayloads { _ = String(decoding: Data(text.utf8), as: UTF8.self) }
                    }
                default:
                    time = try await measureAsync { for page in pages { _ = try SyncWireJSON.encode(page) } }
                }
                samples[variant, default: []].append(time)
            }
        }
        for variant in variants {
            let median = Stats.median(samples[variant] ?? [])
            let server = Stats.median(samples[variant + " server"] ?? [])
            let total = { (key: String) in (samples[variant + key] ?? []).reduce(0, +) / Double(max(1, samples[variant]?.count ?? 1)) }
            log("anatomy: \(variant): \(String(format: "%.4f", median)) s, inside the server \(String(format: "%.4f", server)) s, "
                + "CPU of the bench \(String(format: "%.3f", total(" cpu"))) s and of its PostgreSQL backend \(String(format: "%.3f", total(" pg cpu"))) s (means) (\(samples[variant]?.map { String(format: "%.3f", $0) }.joined(separator: " ") ?? ""))")
        }
        await staticServer.shutdown(gracePeriod: .seconds(5))
        await relay.shutdown(gracePeriod: .seconds(5))
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
    }

    /// User and system CPU seconds of this process so far.
    private static func processCPU() -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// User and system CPU seconds of the PostgreSQL backend `pid` so far (/proc, in ticks of
    /// 10 ms); 0 where there is no /proc (the diagnostic then reports the bench's CPU alone).
    private static func backendCPU(_ pid: Int32) -> Double {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state is field 3; utime and stime are fields 14 and 15.
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
            return (user + system) / 100
        #else
            return 0
        #endif
    }

    /// The lines of an answer of several pages, split where the client splits them.
    private static func lines(_ body: Data) -> [Data] {
        var start = 0
        return SyncWireJSON.lineEnds(body).map { end in
            defer { start = end + 1 }
            return body[body.startIndex + start..<body.startIndex + end]
        }
    }

    /// The `curl` command fetching `urls` in one process (one connection): the sum of its
    /// `time_total`s.
    private func curlTime(_ urls: [String], token: String) throws -> Double {
        // SpawnedProcess, as the rest of the bench: Foundation's `Process` can crash in `run()` on
        // Linux (swiftlang/swift-corelibs-foundation#5472).
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        var arguments = ["-s", "-H", "Authorization: Bearer \(token)", "-w", "%{time_total}\\n"]
        for url in urls { arguments += ["-o", "/dev/null", url] }
        process.arguments = arguments
        let output = try process.runReadingOutput()
        guard process.terminationStatus == 0 else { throw BenchFailure("curl failed") }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { Double($0) }.reduce(0, +)
    }
}

extension Array {
    fileprivate func rotatedForAnatomy(by count: Int) -> [Element] {
        guard !isEmpty else { return self }
        let shift = count % self.count
        return Array(self[shift...] + self[..<shift])
    }
}
