import Foundation
import RecordKeeperSync
import RecordKeeperCommandLine
import RecordKeeperPostgres
import RecordKeeperRelay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `recordkeeper-relay serve`: the relay over PostgreSQL, until SIGTERM.
enum ServeCommand {
    static func run(_ settings: RelaySettings, until stop: @Sendable () async -> Void) async throws -> ExitCode {
        let database = try RelayDatabase.choose(settings)
        let listen = try listenAddress(settings.value("listen", environment: "RECORDKEEPER_RELAY_LISTEN") ?? "127.0.0.1:8080")
        var verifierConfiguration = JWTVerifier.Configuration(key: try verificationKey(settings))
        verifierConfiguration.issuer = settings.value("jwt-issuer")
        verifierConfiguration.audience = settings.value("jwt-audience")
        let leeway = try settings.seconds("jwt-leeway", default: 60) ?? 60
        // Clock skew, not a second lifetime: a leeway of days would all but switch `exp` off.
        guard leeway <= 3600 else {
            throw UsageError(message: "--jwt-leeway takes at most 3600 seconds (an hour), not \(leeway)", command: "serve")
        }
        verifierConfiguration.leeway = .seconds(leeway)
        if verifierConfiguration.audience == nil {
            // RFC 8725 3.9: a key that also signs tokens for another service (a staging relay)
            // makes those tokens good here too, unless each names its audience.
            StandardStreams.writeError(
                "recordkeeper-relay: warning: no --jwt-audience: a token signed with this key for any other service "
                    + "is accepted too; give each relay's tokens an aud and set it here")
        }
        var http = HTTPServer.Configuration(host: listen.host, port: listen.port)
        http.connectionLimit = try settings.integer("max-connections", default: 4096, in: 1...1_000_000)
        http.headerTimeout = .seconds(try settings.seconds("header-timeout", default: 10, minimum: 1) ?? 10)
        http.idleTimeout = .seconds(try settings.seconds("idle-timeout", default: 30, minimum: 1) ?? 30)
        http.bodyTimeout = .seconds(try settings.seconds("body-timeout", default: 120, minimum: 1) ?? 120)
        http.sendTimeout = .seconds(try settings.seconds("send-timeout", default: 120, minimum: 1) ?? 120)
        http.tls = try tls(settings)
        let grace = try settings.seconds("grace", default: 30) ?? 30
        let pool = try settings.integer("pool", default: 4, in: 1...1000)
        let statementTimeout = try settings.seconds("statement-timeout", default: nil, minimum: 1)
        var relayConfiguration = SyncRelay.Configuration(verifier: JWTVerifier(verifierConfiguration))
        relayConfiguration.maxBodyBytes = try settings.integer("max-body", default: 8 << 20, in: 1024...(1 << 30))
        let maxPullWait = try settings.seconds("max-pull-wait", environment: "RECORDKEEPER_RELAY_MAX_PULL_WAIT", default: 60) ?? 60
        guard maxPullWait <= Int(SyncPage.maximumWait.components.seconds) else {
            throw UsageError(
                message: "--max-pull-wait takes at most \(SyncPage.maximumWait.components.seconds) seconds, not \(maxPullWait)",
                command: "serve")
        }
        relayConfiguration.maxPullWait = .seconds(maxPullWait)
        relayConfiguration.maxPagesPerAnswer = try settings.integer(
            "max-pages-per-answer", default: RelayWire.maximumPagesPerAnswer, in: 1...RelayWire.maximumPagesPerAnswer)
        relayConfiguration.pullsAhead = try settings.integer("pulls-ahead", default: 16, in: 0...1024)
        let liveWake = try liveWake(settings)
        let wakeConninfo = settings.value("wake-database", environment: "RECORDKEEPER_RELAY_WAKE_DATABASE")
        raiseDescriptorLimit(toAtLeast: http.connectionLimit + (pool + 1) * database.shardCount + 64)

        // Connecting migrates a schema that is behind (which needs CREATE); a current one,
        // migrated by `migrate`, is served by a role with DML rights only (docs/RELAY.md). That
        // is the only schema check: requests never check it again. A pool (and a wake session)
        // is per shard.
        let server = try await database.connect(connections: pool, liveWake: liveWake, wakeConninfo: wakeConninfo)
        if let statementTimeout {
            // A session setting, given again to each new session after a lost one: behind
            // PgBouncer in transaction mode, set it on the role instead (docs/SCALING.md
            // "PgBouncer").
            for connection in server.shardServers.flatMap(\.connections) {
                try await connection.executeOnEverySession(
                    "SELECT set_config('statement_timeout', $1, false)", [.text("\(statementTimeout)s")],
                    operation: "set the statement timeout")
            }
        }
        if case .sharded(let map, let file) = database, let sharded = server as? ShardedPostgresSyncServer {
            // A map that would move existing spaces is refused before anything is served
            // (docs/SCALING.md "Adding a database").
            do {
                try await sharded.checkPlacement()
            } catch let error as SyncError where error.code == .configuration {
                throw RelayToolError(.configuration, "\(file): \(error.message)")
            }
            StandardStreams.writeError(
                "recordkeeper-relay: serving \(map.shards.count) shards (\(map.shards.map(\.name).joined(separator: ", "))), "
                    + "\(map.overrides.count) override(s)")
        }
        if case .listen = liveWake {
            // Notifications that never arrive (a transaction-pooling PgBouncer on the wake
            // session's way) would make every held pull wait out its wait: refused here.
            for shard in server.shardServers { try await shard.checkLiveWake() }
        }
        relayConfiguration.healthCheck = { [shards = server.shardServers] in
            for shard in shards { try await shard.checkHealth() }
        }
        let relay = SyncRelay(server: server, configuration: relayConfiguration)
        let serving = try start(relay, http)
        let scheme = http.tls == nil ? "http" : "https"
        StandardStreams.write("recordkeeper-relay: listening on \(scheme)://\(serving.address)\n")
        await stop()
        StandardStreams.writeError("recordkeeper-relay: stopping: new requests get 503, running ones finish")
        await serving.shutdown(gracePeriod: .seconds(grace))
        StandardStreams.writeError("recordkeeper-relay: stopped")
        return .ok
    }

    private static func start(_ relay: SyncRelay, _ http: HTTPServer.Configuration) throws(RelayToolError) -> HTTPServer {
        do {
            return try relay.serve(http)
        } catch {
            throw RelayToolError(.configuration, error.message)
        }
    }

    /// `--live-wake poll` (the default: ``PostgresSyncServer/LiveWake/default``), `poll:MS`
    /// (every MS milliseconds), or `listen`.
    static func liveWake(_ settings: RelaySettings) throws(UsageError) -> PostgresSyncServer.LiveWake {
        guard let text = settings.value("live-wake", environment: "RECORDKEEPER_RELAY_LIVE_WAKE") else { return .default }
        if text == "listen" { return .listen }
        if text == "poll" { return .default }
        if text.hasPrefix("poll:"), let milliseconds = Int(text.dropFirst(5)), (1...10_000).contains(milliseconds) {
            return .poll(every: .milliseconds(milliseconds))
        }
        throw UsageError(
            message: "--live-wake takes listen, poll, or poll:MS (1 to 10000 milliseconds), not '\(text)'", command: "serve")
    }

    /// `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` (all IPv4 addresses).
    static func listenAddress(_ text: String) throws(UsageError) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw UsageError(message: "--listen takes HOST:PORT, not '\(text)'", command: "serve")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    private static func verificationKey(_ settings: RelaySettings) throws -> JWTVerificationKey {
        let secretFile = settings.value("jwt-secret-file", environment: "RECORDKEEPER_RELAY_JWT_SECRET_FILE")
        let publicKey = settings.value("jwt-public-key", environment: "RECORDKEEPER_RELAY_JWT_PUBLIC_KEY")
        do {
            switch (secretFile, publicKey) {
            case (let path?, nil):
                return try .hs256(secret: try settings.secret(path))
            case (nil, let key?):
                let pem = key.hasPrefix("-----BEGIN")
                    ? key : String(decoding: try settings.file(key, "public key file"), as: UTF8.self)
                return try .es256(publicKeyPEM: pem)
            case (nil, nil):
                throw UsageError(message: "serve needs --jwt-secret-file or --jwt-public-key", command: "serve")
            case (_?, _?):
                throw UsageError(message: "give --jwt-secret-file or --jwt-public-key, not both", command: "serve")
            }
        } catch let error as JWTKeyError {
            throw RelayToolError(.configuration, "the token key cannot be used: \(error.message)")
        }
    }

    private static func tls(_ settings: RelaySettings) throws -> HTTPServer.TLS? {
        switch (settings.value("tls-cert"), settings.value("tls-key")) {
        case (nil, nil): return nil
        case (let certificate?, let key?):
            for path in [certificate, key] where !FileManager.default.fileExists(atPath: path) {
                throw RelayToolError(.notFound, "the TLS file \(path) does not exist")
            }
            do {
                return try HTTPServer.TLS(certificateFile: certificate, privateKeyFile: key)
            } catch {
                throw RelayToolError(.notFound, error.message)
            }
        default:
            throw UsageError(message: "--tls-cert and --tls-key go together", command: "serve")
        }
    }

    /// Lets the process open as many descriptors as its connections need, up to the hard limit.
    private static func raiseDescriptorLimit(toAtLeast wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            StandardStreams.writeError("recordkeeper-relay: could not raise the open-file limit to \(wanted); connections may fail")
        }
    }
}
