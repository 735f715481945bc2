import Foundation
import RecordKeeper
import RecordKeeperRelay

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The servers of a run: one or two PostgreSQL databases and relays A and B over them, on
/// loopback, with the secret their tokens are signed with.
final class Cluster: Sendable {
    /// A database: its conninfo, and the server when the load test owns it (and may restart it).
    struct Database: Sendable {
        var conninfo: String
        var server: PostgresInstance?
    }

    let directory: URL
    let databases: [Database]
    let relays: [RelayInstance]
    private let secret: [UInt8]
    private let metricsSession: URLSession

    private init(directory: URL, databases: [Database], relays: [RelayInstance], secret: [UInt8]) {
        self.directory = directory
        self.databases = databases
        self.relays = relays
        self.secret = secret
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 5
        metricsSession = URLSession(configuration: configuration)
    }

    /// Starts (or takes) the databases, migrates them with `recordkeeper-relay migrate`, and
    /// starts relays A and B over them.
    static func start(_ options: LoadTestOptions, in directory: URL) async throws -> Cluster {
        let relay = try relayExecutable(options)
        var databases: [Database] = []
        if options.databases.isEmpty {
            for index in 0..<options.ownDatabases {
                let server = try await PostgresInstance.start(name: "\(index + 1)", under: directory, bin: options.postgresBin)
                databases.append(Database(conninfo: server.conninfo, server: server))
            }
        } else {
            databases = options.databases.map { Database(conninfo: $0, server: nil) }
        }
        do {
            return try await start(options, relay: relay, databases: databases, in: directory)
        } catch {
            for database in databases {
                do { try await database.server?.stop() } catch { say("recordkeeper-loadtest: \(error)") }
            }
            throw error
        }
    }

    private static func start(_ options: LoadTestOptions, relay: String, databases: [Database], in directory: URL) async throws -> Cluster {
        // One database: `--database`. Two: a shard map over both, which every relay reads
        // (docs/SCALING.md), so spaces land on both by the map's hash.
        let databaseArguments: [String]
        if databases.count == 1 {
            databaseArguments = ["--database", databases[0].conninfo]
        } else {
            let map = directory.appendingPathComponent("shards.json")
            let shards = databases.enumerated().map { index, database in
                ["name": "db\(index + 1)", "conninfo": database.conninfo]
            }
            let file: [String: Any] = ["version": 1, "shards": shards, "overrides": [String: String]()]
            try JSONSerialization.data(withJSONObject: file, options: [.prettyPrinted, .sortedKeys]).write(to: map)
            databaseArguments = ["--shard-map", map.path]
        }
        try await Commands.check(relay, ["migrate"] + databaseArguments, "recordkeeper-relay migrate")
        // Printable (64 hex digits): the relay drops a trailing newline from the file, which
        // would shorten a random byte string ending in 0x0A below the 32 bytes HS256 needs.
        let secret = Array((0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined().utf8)
        let secretFile = directory.appendingPathComponent("relay-secret")
        try Data(secret).write(to: secretFile)
        let serve = databaseArguments + ["--jwt-secret-file", secretFile.path, "--pool", String(options.pool), "--grace", "5", "--max-connections", "4096"]
            + options.relayArguments
        let relays = ["A", "B"].map { RelayInstance(name: $0, executable: relay, arguments: serve, directory: directory) }
        for (index, instance) in relays.enumerated() {
            do {
                try await instance.start()
            } catch {
                for started in relays[..<index] {
                    do { try await started.stop() } catch { say("recordkeeper-loadtest: \(error)") }
                }
                throw error
            }
        }
        return Cluster(directory: directory, databases: databases, relays: relays, secret: secret)
    }

    /// A token for `space`, valid for a day.
    func token(_ space: String) throws -> String {
        try JWTSigner(key: .hs256(secret: secret))
            .sign(RelayAccess(space: space).claims(expiresAt: Date().timeIntervalSince1970 + 86_400))
    }

    /// A relay client holding a token for `space`, with a session of its own (as a device has:
    /// a shared session would queue held pulls behind its per-host connection limit).
    func client(relay: Int, space: String) throws -> HTTPSyncServer {
        let token = try token(space)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 120
        configuration.httpMaximumConnectionsPerHost = 4
        return HTTPSyncServer(url: relays[relay].url, session: URLSession(configuration: configuration)) { token }
    }

    /// The relay's gauges at `GET /metrics` (name → value), empty when it does not answer.
    func gauges(relay: Int) async -> [String: Double] {
        let url = relays[relay].url.appendingPathComponent("metrics")
        guard let (data, _) = try? await metricsSession.data(from: url) else { return [:] }
        var gauges: [String: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, !parts[0].contains("{"), let value = Double(parts[1]) else { continue }
            gauges[String(parts[0])] = value
        }
        return gauges
    }

    /// Stops the relays, then the databases the load test owns.
    func shutdown() async {
        for relay in relays {
            do { try await relay.stop() } catch { say("recordkeeper-loadtest: \(error)") }
        }
        for database in databases {
            guard let server = database.server else { continue }
            do { try await server.stop() } catch { say("recordkeeper-loadtest: \(error)") }
        }
    }

    private static func relayExecutable(_ options: LoadTestOptions) throws -> String {
        if let path = options.relayExecutable { return path }
        var own = CommandLine.arguments[0]
        #if os(Linux)
            if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { own = path }
        #endif
        let beside = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("recordkeeper-relay").path
        guard FileManager.default.isExecutableFile(atPath: beside) else {
            throw LoadTestFailure("recordkeeper-relay not found at \(beside): build it (swift build) or pass --relay")
        }
        return beside
    }
}
