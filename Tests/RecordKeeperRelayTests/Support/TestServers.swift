import Foundation
import RecordKeeperRelay

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs `body` with a server on 127.0.0.1 (a free port) serving `routes`, and shuts the server
/// down afterwards, also when `body` throws.
func withServer<T>(
    _ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    routes: [HTTPRoute],
    observer: (@Sendable (HTTPRequestSummary) -> Void)? = nil,
    _ body: (HTTPServer) async throws -> T
) async throws -> T {
    var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
    configuration.log = { _ in }
    configuration.relaxedForTests()
    configure(&configuration)
    let server = try HTTPServer(configuration: configuration, routes: routes, observer: observer)
    do {
        let result = try await body(server)
        await server.shutdown(gracePeriod: .seconds(5))
        return result
    } catch {
        await server.shutdown(gracePeriod: .seconds(5))
        throw error
    }
}

extension HTTPServer.Configuration {
    /// Timeouts far above any test's pace. The whole suite runs in one process, and other
    /// suites' work can keep Swift's few cooperative threads busy for a minute or more: a test
    /// that connects and then waits its turn to send must not be cut off by the default header
    /// timeout. Tests of the timeouts set their own.
    mutating func relaxedForTests() {
        headerTimeout = .seconds(600)
        bodyTimeout = .seconds(600)
        idleTimeout = .seconds(600)
    }
}

/// A response as a test reads it.
struct ClientResponse {
    let status: Int
    let headers: [String: String]
    let body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Sends one request with URLSession (FoundationNetworking on Linux).
func request(
    _ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
    session: URLSession = .shared
) async throws -> ClientResponse {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.timeoutInterval = 600
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body
    let (data, response) = try await session.data(for: request)
    let http = response as! HTTPURLResponse
    var fields: [String: String] = [:]
    for (name, value) in http.allHeaderFields {
        fields[String(describing: name)] = String(describing: value)
    }
    return ClientResponse(status: http.statusCode, headers: fields, body: data)
}
