import Foundation
import RecordKeeperRelay
import TestHelpers
import Testing

/// What the server refuses to take: bodies over the limit (413), headers that trickle in
/// byte by byte (disconnected), connections past the limit.
@Suite(.timeLimit(.minutes(10))) struct HTTPServerLimitsTests {
    private static let sink = HTTPRoute(.post, "/sink") { request in
        HTTPResponse(status: 200, text: "\(request.body.count)")
    }

    @Test func `a Content-Length over the limit is answered 413 before the body is sent`() async throws {
        try await withServer({ $0.maxBodyBytes = 1000 }, routes: [Self.sink]) { server in
            let connection = try await RawConnection.open(port: server.port)
            // Only the headers: the answer must not wait for a body that never comes.
            try await connection.send("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 413)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(text.contains(#""code":"payloadTooLarge""#))
            #expect(text.contains(#""maxBodyBytes":1000"#))
        }
    }

    @Test func `a body of exactly the limit is accepted`() async throws {
        try await withServer({ $0.maxBodyBytes = 1000 }, routes: [Self.sink]) { server in
            let response = try await request(
                "POST", "http://127.0.0.1:\(server.port)/sink", body: Data(repeating: 1, count: 1000))
            #expect(response.status == 200)
            #expect(response.text == "1000\n")
        }
    }

    @Test func `a chunked body growing past the limit is answered 413 and never reaches the handler`() async throws {
        let handled = Counter()
        let route = HTTPRoute(.post, "/sink") { _ in
            handled.increment()
            return HTTPResponse(status: 200)
        }
        try await withServer({ $0.maxBodyBytes = 1000 }, routes: [route]) { server in
            let connection = try await RawConnection.open(port: server.port)
            let chunk = String(repeating: "a", count: 600)
            try await connection.send(
                "POST /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 413)
        }
        #expect(handled.count == 0)
    }

    @Test func `a chunked body far past the limit is cut off`() async throws {
        try await withServer({ $0.maxBodyBytes = 1000 }, routes: [Self.sink]) { server in
            let connection = try await RawConnection.open(port: server.port)
            try await connection.send("POST /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "3e8\r\n" + String(repeating: "b", count: 1000) + "\r\n"
            var sent = 0
            do {
                while sent < 100 {
                    try await connection.send(chunk)
                    sent += 1
                }
            } catch {
                // The server closed the connection: sending fails.
            }
            #expect(await connection.waitForClose())
            #expect(sent < 100, "the server kept reading \(sent) KB")
        }
    }

    @Test func `a client sending its headers byte by byte is disconnected after the header timeout`() async throws {
        try await withServer({
            $0.headerTimeout = .milliseconds(500)
            $0.idleTimeout = .seconds(60)  // so that only the header deadline can cut it
        }, routes: [Self.sink]) { server in
            let connection = try await RawConnection.open(port: server.port)
            let headers = Array("POST /sink HTTP/1.1\r\nHost: x\r\nX-Padding: \(String(repeating: "p", count: 400))\r\n".utf8)
            var sent = 0
            // One byte, then up to 50 ms for the server to close: a steady trickle that the idle
            // timeout alone would never stop. All of it would take 20 seconds.
            while sent < headers.count {
                do {
                    try await connection.send(Data([headers[sent]]))
                } catch {
                    break
                }
                sent += 1
                if await connection.isClosed(withinMilliseconds: 50) { break }
            }
            #expect(sent < headers.count, "the whole header was accepted byte by byte")
            #expect(await connection.waitForClose())
            // The server still serves others.
            let response = try await request("POST", "http://127.0.0.1:\(server.port)/sink", body: Data("ok".utf8))
            #expect(response.status == 200)
        }
    }

    @Test func `connections past the limit wait until one closes`() async throws {
        try await withServer({ $0.connectionLimit = 2 }, routes: [Self.sink]) { server in
            var held: [RawConnection] = []
            for _ in 0..<2 {
                let connection = try await RawConnection.open(port: server.port)
                try await connection.send("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
                #expect(try await connection.readResponse().status == 200)
                held.append(connection)  // kept alive: still counted
            }
            // At the limit libmicrohttpd stops accepting: the third waits in the listen queue.
            let third = try await RawConnection.open(port: server.port)
            try await third.send("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
            #expect(!(await third.hasAnswer(withinMilliseconds: 300)))
            #expect(server.statistics.connections == 2)
            held[0].disconnect()
            let response = try await third.readResponse()
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "2\n")
        }
    }
}
