import Foundation
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// The `recordkeeper` tool beside an in-process relay that checks tokens against the real
/// clock (the tool mints nothing: the test writes its token file), over any sync server.
struct ToolBesideRelay {
    static let secret = Array("the tool-beside-relay tests' secret, 32+ bytes".utf8)

    let executable: URL
    /// A file holding a token for `space`, valid for an hour.
    let tokenFile: URL
    /// The environment the tool runs with: none of its sync or store variables.
    let environment: [String: String?] = [
        "RECORDKEEPER_SYNC_SERVER": nil, "RECORDKEEPER_SYNC_TOKEN": nil, "RECORDKEEPER_STORE": nil,
    ]

    init(space: String, in directory: URL) throws {
        executable = try #require(BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_BINARY"))
        let token = try JWTSigner(key: .hs256(secret: Self.secret))
            .sign(RelayAccess(space: space).claims(expiresAt: Date().timeIntervalSince1970 + 3600))
        tokenFile = directory.appendingPathComponent("token")
        try Data((token + "\n").utf8).write(to: tokenFile)
    }

    /// Serves a relay over `server` on `port` (0: any free one).
    func serve(_ server: any RecordSyncServer, port: UInt16 = 0) throws -> HTTPServer {
        var verifier = JWTVerifier.Configuration(key: try .hs256(secret: Self.secret))
        verifier.now = { Date() }
        var configuration = SyncRelay.Configuration(verifier: JWTVerifier(verifier))
        configuration.log = { _ in }
        var http = HTTPServer.Configuration(host: "127.0.0.1", port: port)
        http.log = { _ in }
        http.relaxedForTests()
        return try SyncRelay(server: server, configuration: configuration).serve(http)
    }
}
