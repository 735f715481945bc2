import Foundation
import RecordKeeperRelay
import RecordKeeperTestSupport
import Testing

/// Requests whose handlers wait hold a suspended connection, not a thread.
@Suite struct HTTPServerHeldRequestsTests {
    /// The threads of this process (Linux: /proc/self/task), or nil where unknown.
    private func threadCount() -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.count
    }

    @Test func `hundreds of held requests cost no thread each and all get their answers`() async throws {
        let count = 300
        let gate = Gate()
        let route = HTTPRoute(.get, "/hold") { request in
            await gate.wait()
            return HTTPResponse(status: 200, text: request.query["n"] ?? "-")
        }
        try await withServer({ $0.connectionLimit = count + 10 }, routes: [route]) { server in
            let before = threadCount()
            var connections: [RawConnection] = []
            for index in 0..<count {
                let connection = try await RawConnection.open(port: server.port)
                try await connection.send("GET /hold?n=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                connections.append(connection)
            }
            await waitUntil { server.statistics.handlers == count }
            if let before, let during = threadCount() {
                // The cooperative pool and Dispatch may add a few threads; one per request would
                // add 300.
                #expect(during - before < 24, "threads grew from \(before) to \(during) for \(count) held requests")
            }
            await gate.open()
            for (index, connection) in connections.enumerated() {
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "\(index)\n")
            }
            await waitUntil { server.statistics.handlers == 0 }
        }
    }
}
