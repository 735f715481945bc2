import Foundation
import HarnessSupport
import RecordKeeper
import RecordKeeperRelay
import TestHelpers
import Testing

/// TLS terminated by the server itself (libmicrohttpd with GnuTLS), with a certificate the test
/// makes, reached by curl that trusts only that certificate.
@Suite(.timeLimit(.minutes(10))) struct HTTPServerTLSTests {
    /// Runs curl with `arguments`; returns its exit status and standard output.
    private func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await onOwnThread {
            let process = SpawnedProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["curl", "--silent", "--show-error", "--max-time", "60"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    @Test func `this libmicrohttpd supports TLS`() {
        #expect(HTTPServer.supportsTLS)
    }

    @Test func `a request over TLS with the server's certificate is answered; plain HTTP is not`() async throws {
        try await withTemporaryDirectory { directory in
            let files = try OpenSSLTool.selfSignedCertificate(in: directory)
            let tls = try HTTPServer.TLS(certificateFile: files.certificate.path, privateKeyFile: files.key.path)
            let route = HTTPRoute(.post, "/echo") { request in HTTPResponse(status: 200, body: request.body) }
            try await withServer({ $0.tls = tls }, routes: [route]) { server in
                let url = "https://127.0.0.1:\(server.port)/echo"
                let secure = try await curl(["--cacert", files.certificate.path, "--data-binary", "over tls", url])
                #expect(secure.status == 0)
                #expect(secure.output == "over tls")
                // Without trusting the certificate curl refuses it (60: peer certificate not verified).
                let untrusted = try await curl(["--data-binary", "x", url])
                #expect(untrusted.status == 60)
                let plain = try await curl(["--data-binary", "x", "http://127.0.0.1:\(server.port)/echo"])
                #expect(plain.status != 0)
                #expect(plain.output.isEmpty)
            }
        }
    }

    @Test func `a relay client at an http URL of a TLS server is told that it needs https`() async throws {
        try await withTemporaryDirectory { directory in
            let files = try OpenSSLTool.selfSignedCertificate(in: directory)
            let tls = try HTTPServer.TLS(certificateFile: files.certificate.path, privateKeyFile: files.key.path)
            let route = HTTPRoute(.get, RelayWire.pullPath) { _ in HTTPResponse(status: 200, text: "unused") }
            try await withServer({ $0.tls = tls }, routes: [route]) { server in
                let client = HTTPSyncServer(url: URL(string: "http://127.0.0.1:\(server.port)")!) { "token" }
                let error = await #expect(throws: SyncError.self) {
                    _ = try await client.pull(space: "alice", after: .start, limit: 10)
                }
                // Not "configuration": an empty reply (a relay restarting) is the same error.
                #expect(error?.code == .unreachable, "\(String(describing: error))")
                #expect(error?.message.contains("needs an https:// URL") == true, "\(String(describing: error))")
            }
        }
    }

    @Test func `a certificate that is not one stops the server from starting, with a reason`() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.log = { _ in }
        configuration.tls = HTTPServer.TLS(certificatePEM: "not a certificate", privateKeyPEM: "nor a key")
        #expect {
            _ = try HTTPServer(configuration: configuration, routes: [])
        } throws: { error in
            guard let error = error as? HTTPServerError else { return false }
            return error.kind == .start && error.message.hasPrefix("libmicrohttpd could not listen on 127.0.0.1:0")
        }
    }
}
