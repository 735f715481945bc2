import Foundation
import RecordKeeperRelay
#if canImport(Glibc)
    import Glibc
#endif
import TestHelpers
import Testing

/// `recordkeeper sync` against TLS it cannot use: a certificate this machine does not trust, an
/// `https://` URL of a server that speaks plain HTTP, a URL that cannot be used. Each is a
/// setting to correct (exit 78, "trying again does not help"), never "run sync again later",
/// and the store is not created.
@Suite(.timeLimit(.minutes(10))) struct SyncToolTLSTests {
    /// Runs `recordkeeper --store STORE sync --server SERVER --token-file TOKEN --collections notes`.
    private func sync(_ store: URL, server: String, token: URL) async throws -> ChildProcess.Result {
        let executable = try #require(BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_BINARY"))
        let environment: [String: String?] = [
            "RECORDKEEPER_SYNC_SERVER": nil, "RECORDKEEPER_SYNC_TOKEN": nil, "RECORDKEEPER_STORE": nil,
        ]
        return try await ChildProcess.run(
            executable, ["--store", store.path, "sync", "--server", server, "--token-file", token.path, "--collections", "notes"],
            in: store.deletingLastPathComponent(), environment: environment)
    }

    @Test func `an untrusted certificate, TLS against plain HTTP and an unusable URL exit 78 and create nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let token = directory.appendingPathComponent("token")
            try Data((try LiveRelay.token("alice") + "\n").utf8).write(to: token)
            let store = directory.appendingPathComponent("s.sqlite")
            let files = try OpenSSLTool.selfSignedCertificate(in: directory)
            let tls = try HTTPServer.TLS(certificateFile: files.certificate.path, privateKeyFile: files.key.path)
            let health = HTTPRoute(.get, "/v1/health") { _ in HTTPResponse(status: 200, body: Data("{}".utf8)) }
            try await withServer({ $0.tls = tls }, routes: [health]) { secure in
                let untrusted = try await sync(store, server: "https://127.0.0.1:\(secure.port)", token: token)
                #expect(untrusted.status == 78, "\(untrusted.stderr)")
                #expect(untrusted.stderr.contains("the TLS connection failed"), "\(untrusted.stderr)")
                #expect(untrusted.stderr.contains("trying again does not help"), "\(untrusted.stderr)")
                #expect(untrusted.stderr.contains("Trusting the relay's certificate"), "\(untrusted.stderr)")
            }
            // A plain-HTTP server that answers at once, whatever it receives. (libmicrohttpd,
            // sent a TLS ClientHello, sometimes closes without answering on a slow machine:
            // curl then reports SSL_ERROR_SYSCALL, a handshake cut short, rightly exit 69.)
            let plain = try PlainAnswerer()
            let mismatched = try await sync(store, server: "https://127.0.0.1:\(plain.port)", token: token)
            #expect(mismatched.status == 78, "\(mismatched.stderr)")
            #expect(mismatched.stderr.contains("the server speaks no TLS at this address"), "\(mismatched.stderr)")
            for scheme in ["ftp://127.0.0.1:1", "WS://relay.example"] {
                let other = try await sync(store, server: scheme, token: token)
                #expect(other.status == 78, "\(scheme): \(other.stderr)")
                #expect(other.stderr.contains("a relay is reached with an http:// or https:// URL"), "\(scheme): \(other.stderr)")
            }
            for server in ["http://127.0.0.1:99999", "http://127.0.0.1:0"] {
                let unusable = try await sync(store, server: server, token: token)
                #expect(unusable.status == 78, "\(server): \(unusable.stderr)")
                #expect(unusable.stderr.contains("a port from 1 to 65535"), "\(server): \(unusable.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: store.path), "no store is created")
        }
    }

    @Test func `a relay URL's scheme is read in any case`() async throws {
        try await withTemporaryDirectory { directory in
            let token = directory.appendingPathComponent("token")
            try Data((try LiveRelay.token("alice") + "\n").utf8).write(to: token)
            let store = directory.appendingPathComponent("s.sqlite")
            // Nothing listens on port 1: the URL was used (connection refused, 69), not refused
            // as a URL URLSession cannot take ("unsupported URL").
            let result = try await sync(store, server: "HTTP://127.0.0.1:1", token: token)
            #expect(result.status == 69, "\(result.stderr)")
            #expect(result.stderr.contains("through http://127.0.0.1:1 failed: could not connect"), "\(result.stderr)")
        }
    }
}

/// A TCP server on 127.0.0.1 that answers every connection with a plain HTTP 400 at once,
/// before reading anything, then reads until the client closes: what a plain-HTTP server
/// looks like to a TLS client, the same way every time.
///
/// `@unchecked Sendable`: `descriptor` and `port` are set in `init` and only read afterwards;
/// the accepting thread owns the connections it accepts.
private final class PlainAnswerer: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let (descriptor, port) = try ClosedPort.bindLoopback()
        guard listen(descriptor, 8) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.port = port
        let thread = Thread {
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { return }  // the listening socket was closed
                let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(connection, $0.baseAddress, $0.count) }) > 0 {}
                close(connection)
            }
        }
        thread.start()
    }

    deinit {
        shutdown(descriptor, Int32(SHUT_RDWR))
        close(descriptor)
    }
}
