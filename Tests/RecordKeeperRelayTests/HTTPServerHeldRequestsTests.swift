import Foundation
import RecordKeeperRelay
import TestHelpers
import Testing

/// Requests whose handlers wait hold a suspended connection, not a thread.
@Suite(.timeLimit(.minutes(10))) struct HTTPServerHeldRequestsTests {
    /// The names of this process's threads (Linux: /proc/self/task/*/comm), or nil where
    /// unknown. libmicrohttpd names its own: `MHD-single`, `MHD-worker`, `MHD-connection` (one
    /// per connection, in the thread-per-connection mode the server must not use).
    private func threadNames() -> [String]? {
        #if os(Linux)
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
            return tasks.compactMap { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
        #else
            return nil
        #endif
    }

    @Test func `hundreds of held requests cost no thread each and all get their answers`() async throws {
        let count = 300
        let gate = Gate()
        let arrivals = Arrivals()
        let route = HTTPRoute(.get, "/hold") { request in
            await arrivals.arrive()
            await gate.wait()
            return HTTPResponse(status: 200, text: request.query["n"] ?? "-")
        }
        try await withServer({ $0.connectionLimit = count + 10 }, routes: [route]) { server in
            var connections: [RawConnection] = []
            for index in 0..<count {
                let connection = try await RawConnection.open(port: server.port)
                try await connection.send("GET /hold?n=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                connections.append(connection)
            }
            await arrivals.wait(for: count)
            #expect(server.statistics.handlers == count)
            if let during = threadNames() {
                // libmicrohttpd's threads (it names them all `MHD-…`): polling threads only,
                // none per connection. Only its threads are counted: the whole process's count
                // moves with the other suites running beside this one (their servers have a
                // polling thread each); one thread per held request would be 300.
                #expect(!during.contains("MHD-connection"))
                let served = during.filter { $0.hasPrefix("MHD") }
                #expect(served.count < count / 3, "libmicrohttpd runs \(served.count) threads for \(count) held requests: \(served)")
            }
            await gate.open()
            for (index, connection) in connections.enumerated() {
                let response = try await connection.readResponse()
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "\(index)\n")
            }
            try await waitUntil { server.statistics.handlers == 0 }
        }
    }
}
