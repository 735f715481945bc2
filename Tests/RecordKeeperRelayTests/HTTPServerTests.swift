import Foundation
import RecordKeeperRelay
import TestHelpers
import Testing

/// The HTTP server over libmicrohttpd, over real loopback connections: routes, query
/// parameters, headers and bodies reach the handler; responses carry status, headers, body.
@Suite(.timeLimit(.minutes(10))) struct HTTPServerTests {
    private static let echo = HTTPRoute(.post, "/echo") { request in
        var response = HTTPResponse(status: 201, body: request.body)
        response.headers.add("X-Query-Name", request.query["name"] ?? "-")
        response.headers.add("X-Seen-Header", request.headers["x-test"] ?? "-")
        response.headers.add("X-Method", request.method.rawValue)
        return response
    }

    @Test func `a route gets the query, headers and body and answers with its own`() async throws {
        try await withServer(routes: [Self.echo]) { server in
            let response = try await request(
                "POST", "http://127.0.0.1:\(server.port)/echo?name=caf%C3%A9%20au%26lait&other=1",
                headers: ["X-Test": "seen"], body: Data("hello".utf8))
            #expect(response.status == 201)
            #expect(response.text == "hello")
            #expect(response.header("X-Query-Name") == "café au&lait")
            #expect(response.header("X-Seen-Header") == "seen")
            #expect(response.header("X-Method") == "POST")
        }
    }

    @Test func `a large body arrives whole`() async throws {
        let body = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try await withServer({ $0.maxBodyBytes = 4_000_000 }, routes: [Self.echo]) { server in
            let response = try await request("POST", "http://127.0.0.1:\(server.port)/echo", body: body)
            #expect(response.status == 201)
            #expect(response.body == body)
        }
    }

    @Test func `unknown paths are 404 and other methods of a known path 405 with Allow`() async throws {
        try await withServer(routes: [Self.echo]) { server in
            let missing = try await request("GET", "http://127.0.0.1:\(server.port)/nothing")
            #expect(missing.status == 404)
            #expect(missing.text.contains(#""code":"notFound""#))
            let wrongMethod = try await request("GET", "http://127.0.0.1:\(server.port)/echo")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "POST")
        }
    }

    @Test func `a chunked body and keep-alive requests on one connection work`() async throws {
        try await withServer(routes: [Self.echo]) { server in
            let connection = try await RawConnection.open(port: server.port)
            try await connection.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            let first = try await connection.readResponse()
            #expect(first.status == 201)
            #expect(String(decoding: first.body, as: UTF8.self) == "hello world")
            try await connection.send("POST /echo?name=again HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
            let second = try await connection.readResponse()
            #expect(second.headers["x-query-name"] == "again")
            #expect(String(decoding: second.body, as: UTF8.self) == "ok")
        }
    }

    @Test func `one log line per request names method, route, status and duration, never the query`() async throws {
        let lines = LinesCollector()
        try await withServer({ $0.log = { lines.append($0) } }, routes: [Self.echo]) { server in
            _ = try await request("POST", "http://127.0.0.1:\(server.port)/echo?name=secret-token", body: Data("x".utf8))
            _ = try await request("GET", "http://127.0.0.1:\(server.port)/private/path")
        }
        let logged = lines.lines
        #expect(logged.count == 2)
        #expect(logged.first?.hasPrefix("method=POST route=/echo status=201 duration_ms=") == true)
        #expect(logged.last?.hasPrefix("method=GET route=unmatched status=404") == true)
        #expect(!logged.joined().contains("secret-token"))
        #expect(!logged.joined().contains("private"))
    }
}

/// Lines a server logs, collected from its threads.
final class LinesCollector: Sendable {
    private let storage = Protected<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}
