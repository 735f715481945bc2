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

    /// A relay to sync through: its URL, the token, and what the token's claims say it grants.
    ///
    /// The claims are read without verifying the token (only the relay holds the key): they
    /// serve to refuse early and clearly (another space, a read-only token with something to
    /// push), never to grant anything. ``connect(_:timeout:collections:)`` has the relay check this very
    /// token before the store is touched, so once connected they are the claims the relay holds
    /// every request to; a forged token is refused there (77).
    struct Relay {
        var url: URL
        var token: String
        var space: String
        /// The token's `read_only` claim: it may pull but not push.
        var readOnly: Bool
    }

    /// The scheme of `server` in lower case when it starts like a URL (`scheme://`), else nil.
    static func urlScheme(_ server: String) -> String? {
        guard let range = server.range(of: "://") else { return nil }
        let scheme = server[..<range.lowerBound]
        guard let first = scheme.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first),
            scheme.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+.-".unicodeScalars.contains($0)) })
        else { return nil }
        return scheme.lowercased()
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
        // The scheme in any case (URLSession takes it in lower case only), a port 1–65535.
        guard var components = URLComponents(string: server), components.host?.isEmpty == false,
            components.query == nil, components.fragment == nil, components.port.map({ (1...65_535).contains($0) }) ?? true
        else {
            throw ToolError(.configuration, "--server \(quoted(HTTPClientSupport.withoutPassword(server))) is not a relay URL (http(s)://HOST[:PORT][/PATH], "
                            + "a port from 1 to 65535); nothing was changed")
        }
        components.scheme = components.scheme?.lowercased()
        guard let url = components.url else {
            throw ToolError(.configuration, "--server \(quoted(HTTPClientSupport.withoutPassword(server))) is not a relay URL (http(s)://HOST[:PORT][/PATH]); "
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
            if token.isEmpty {
                throw ToolError(.noPermission, "the token file \(path) is empty: put the token from "
                                + "'recordkeeper-relay token' or the app's sign-in in it; nothing was changed")
            }
        } else if let value = context.environment[tokenVariable], !value.isEmpty {
            token = value.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            throw UsageError(
                message: "sync through a relay needs --token-file FILE (or the token in \(tokenVariable))", command: "sync")
        }
        let claims: (space: String, readOnly: Bool)
        switch tokenClaims(token) {
        case .success(let read):
            claims = read
        case .failure(let problem):
            throw ToolError(.noPermission, "the token cannot be used: \(problem.reason) (a token is a JWT, "
                            + "header.payload.signature, from 'recordkeeper-relay token' or the app's sign-in); nothing was changed")
        }
        return Relay(url: url, token: token, space: claims.space, readOnly: claims.readOnly)
    }

    /// What is wrong with a token's claims, in words.
    struct TokenProblem: Error {
        let reason: String
    }

    /// The `space` and `read_only` claims of a JWT, read without verifying it (only the relay
    /// can; see ``Relay``): the space the relay will hold the token's requests to, and whether
    /// it refuses its pushes. A token without them says what is missing or mistyped, as the
    /// relay would.
    static func tokenClaims(_ token: String) -> Result<(space: String, readOnly: Bool), TokenProblem> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(TokenProblem(reason: "it is not three parts joined by dots")) }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let payload = StrictBase64.decode(base64) else {
            return .failure(TokenProblem(reason: "its payload is not base64url"))
        }
        let claims: TokenClaims
        do {
            claims = try JSONDecoder().decode(TokenClaims.self, from: payload)
        } catch DecodingError.typeMismatch {
            return .failure(TokenProblem(reason: "its payload is not a JSON object"))
        } catch {
            return .failure(TokenProblem(reason: "its payload is not JSON"))
        }
        guard claims.spaceIsString else { return .failure(TokenProblem(reason: "its space claim is not a string")) }
        guard let space = claims.space else { return .failure(TokenProblem(reason: "it has no space claim")) }
        guard !space.isEmpty else { return .failure(TokenProblem(reason: "its space claim is empty")) }
        guard claims.readOnlyIsBoolean else { return .failure(TokenProblem(reason: "its read_only claim is not a Boolean")) }
        return .success((space, claims.readOnly ?? false))
    }

    /// The two claims the tool reads, and whether each has the type the relay requires.
    private struct TokenClaims: Decodable {
        var space: String?
        var spaceIsString = true
        var readOnly: Bool?
        var readOnlyIsBoolean = true

        enum CodingKeys: String, CodingKey {
            case space
            case readOnly = "read_only"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            do {
                space = try container.decodeIfPresent(String.self, forKey: .space)
            } catch DecodingError.typeMismatch {
                spaceIsString = false
            }
            do {
                readOnly = try container.decodeIfPresent(Bool.self, forKey: .readOnly)
            } catch DecodingError.typeMismatch {
                readOnlyIsBoolean = false
            }
        }
    }

    /// Refuses a read-only token when operations are pending, or when collections this sync
    /// would start hold records here (`starting`: starting them queues their records for
    /// upload): the relay would refuse the push (403) after the store was changed. With
    /// nothing to push the sync only pulls.
    static func requirePushable(_ relay: Relay, pending: Int, starting: [CollectionSummary] = []) throws {
        guard relay.readOnly else { return }
        if pending > 0 {
            throw ToolError(
                .noPermission,
                "the token is read-only (its read_only claim): it may pull but not push, and \(pending) local operation(s) "
                    + "stay pending; nothing was changed. Sync with a token that may push, or without pending changes")
        }
        guard !starting.isEmpty else { return }
        let named = starting.sorted { $0.name < $1.name }.map { "\(quoted($0.name)) (\($0.recordCount) record(s))" }
        throw ToolError(
            .noPermission,
            "the token is read-only (its read_only claim): it may pull but not push, and starting to sync "
                + named.joined(separator: ", ") + " would queue those records for upload; nothing was changed. "
                + "Sync with a token that may push, or start only collections that are empty here")
    }

    /// The client of `relay`, whose limits, reachability and acceptance of the token are
    /// checked before the store is touched.
    static func connect(_ relay: Relay, timeout: Duration, collections: Set<String>) async throws(SyncError) -> HTTPSyncServer {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TimeInterval(timeout.components.seconds)
        let token = relay.token
        let server = HTTPSyncServer(url: relay.url, session: URLSession(configuration: configuration)) { token }
        do {
            let health = try await server.health()
            guard health.status == "ok" else {
                throw SyncError(
                    .unreachable, "the relay at \(relay.url.shownWithoutPassword) says its database does not answer"
                        + (health.reason.map { " (\($0))" } ?? ""))
            }
            // The token is tried before the store is touched, with the collections this sync
            // will pull: a refused one (401, or 403 for another space or a collection its
            // `collections` claim does not grant) changes nothing, not even the store's first
            // sync settings.
            // Named as the sync's pulls name them: none for more than a pull may name.
            _ = try await server.pull(
                space: relay.space, after: .start, limit: 1,
                collections: collections.isEmpty ? nil : RecordSync.pullFilter(collections))
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.serverFailure, "the relay's health check failed: \(error)")
        }
        return server
    }
}
