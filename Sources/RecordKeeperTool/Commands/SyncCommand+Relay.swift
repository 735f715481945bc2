import Foundation
import RecordKeeper
import RecordKeeperCommandLine

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `sync --server http(s)://HOST:PORT --token-file F`: syncing through a relay, with a token.
extension SyncCommand {
    /// The environment variable `--token-file` defaults to: the token itself.
    static let tokenVariable = "RECORDKEEPER_SYNC_TOKEN"

    /// A relay to sync through: its URL, the token, and the space the token grants.
    struct Relay {
        var url: URL
        var token: String
        var space: String
    }

    /// Whether `server` names a relay: an `http://` or `https://` URL (any case). Anything
    /// else is a PostgreSQL connection string.
    static func isRelayURL(_ server: String) -> Bool {
        let lowered = server.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// The relay `server` names, with the token of `--token-file` or of `RECORDKEEPER_SYNC_TOKEN`.
    /// Checked without reaching the relay: the URL, the token's form and its `space` claim.
    static func relay(_ server: String, context: CommandContext) throws -> Relay {
        guard let url = URL(string: server), url.host?.isEmpty == false, url.query == nil, url.fragment == nil else {
            throw ToolError(.configuration, "--server \(quoted(server)) is not a relay URL (http(s)://HOST[:PORT][/PATH]); "
                            + "nothing was changed")
        }
        let token: String
        if let path = context.arguments.values["token-file"] {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                let missing = !FileManager.default.fileExists(atPath: path)
                throw ToolError(missing ? .notFound : .ioError,
                                "the token file \(path) \(missing ? "does not exist" : "cannot be read: \(error.localizedDescription)"); "
                                    + "nothing was changed")
            }
            token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let value = context.environment[tokenVariable], !value.isEmpty {
            token = value.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            throw UsageError(
                message: "sync through a relay needs --token-file FILE (or the token in \(tokenVariable))", command: "sync")
        }
        guard let space = tokenSpace(token) else {
            throw ToolError(.noPermission, "the token is not a JWT with a space claim (header.payload.signature, "
                            + "from 'recordkeeper-relay token' or the app's sign-in); nothing was changed")
        }
        return Relay(url: url, token: token, space: space)
    }

    /// The `space` claim of a JWT, read without verifying it (only the relay can): the space
    /// the relay will hold the token's requests to.
    static func tokenSpace(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let payload = Data(base64Encoded: base64) else { return nil }
        struct Claims: Decodable { let space: String }
        do {
            let space = try JSONDecoder().decode(Claims.self, from: payload).space
            return space.isEmpty ? nil : space
        } catch {
            return nil  // not a token with a space: the caller says so, naming what a token is
        }
    }

    /// The client of `relay`, whose limits, reachability and acceptance of the token are
    /// checked before the store is touched.
    static func connect(_ relay: Relay, timeout: Duration) async throws(SyncError) -> HTTPSyncServer {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TimeInterval(timeout.components.seconds)
        let token = relay.token
        let server = HTTPSyncServer(url: relay.url, session: URLSession(configuration: configuration)) { token }
        do {
            let health = try await server.health()
            guard health.status == "ok" else {
                throw SyncError(
                    .unreachable, "the relay at \(relay.url.absoluteString) says its database does not answer"
                        + (health.reason.map { " (\($0))" } ?? ""))
            }
            // The token is tried before the store is touched: a refused one (401, or 403 for
            // another space) changes nothing, not even the store's first sync settings.
            _ = try await server.pull(space: relay.space, after: .start, limit: 1)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.serverFailure, "the relay's health check failed: \(error)")
        }
        return server
    }
}
