import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP connection to a test server on 127.0.0.1, for what URLSession cannot do: send
/// a request byte by byte, hold hundreds of requests open at once, see when the server closes.
///
/// Every blocking socket call runs on a thread of its own (``onOwnThread(_:)``), never on Swift's
/// cooperative pool (whose few threads the server's handlers need), and gives up after `timeout`
/// (a hang guard).
///
/// `@unchecked Sendable`: the descriptor is used by one call at a time (a test awaits each).
final class RawConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Response {
        let status: Int
        let headers: [String: String]
        let body: Data
    }

    private let descriptor: Int32
    private var buffer = Data()

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    #if os(Linux)
        private static let streamType = Int32(SOCK_STREAM.rawValue)
        private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
        private static let streamType = SOCK_STREAM
        private static let sendFlags: Int32 = 0
    #endif

    /// Connects to `port` on 127.0.0.1 and, when given, sends `first` at once on the same
    /// thread: a test process whose cooperative pool is busy (the whole suite at once) then
    /// cannot leave the new connection idle between the two, as separate calls can.
    static func open(port: UInt16, timeout: Duration = .seconds(600), sending first: String? = nil) async throws
        -> RawConnection
    {
        try await blocking {
            let descriptor = socket(AF_INET, streamType, 0)
            guard descriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
            var guardTime = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &guardTime, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &guardTime, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else {
                close(descriptor)
                throw Failure(description: "connect() failed: errno \(errno)")
            }
            let connection = RawConnection(descriptor: descriptor)
            if let first { try sendAll(Data(first.utf8), on: descriptor) }
            return connection
        }
    }

    /// Sends `text` (or `bytes`); throws when the server closed the connection.
    func send(_ text: String) async throws { try await send(Data(text.utf8)) }

    func send(_ bytes: Data) async throws {
        try await Self.blocking { [descriptor] in try Self.sendAll(bytes, on: descriptor) }
    }

    private static func sendAll(_ bytes: Data, on descriptor: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                systemSend(descriptor, raw.baseAddress! + offset, raw.count - offset, Self.sendFlags)
            }
            guard sent > 0 else { throw Failure(description: "send() failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads one response (headers, then a body of its Content-Length).
    func readResponse() async throws -> Response {
        while true {
            if let response = try parse() { return response }
            guard try await receive() else { throw Failure(description: "the server closed the connection") }
        }
    }

    /// Reads (discarding) until the server closes the connection; false if it did not within
    /// the connection's timeout.
    func waitForClose() async -> Bool {
        do {
            while try await receive() {}
            return true
        } catch {
            return false
        }
    }

    /// Whether the server closed the connection within `milliseconds` (poll, no data read).
    func isClosed(withinMilliseconds milliseconds: Int32) async -> Bool {
        let descriptor = descriptor
        let closed: Bool? = try? await Self.blocking {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, milliseconds) > 0 else { return false }
            var byte: UInt8 = 0
            let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK))
            return count <= 0
        }
        return closed ?? true
    }

    /// Closes the connection from this side (the descriptor itself is closed on deinit).
    func disconnect() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Whether the server sent something (or closed) within `milliseconds`.
    func hasAnswer(withinMilliseconds milliseconds: Int32) async -> Bool {
        let descriptor = descriptor
        let ready: Bool? = try? await Self.blocking {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, milliseconds) > 0
        }
        return ready ?? false
    }

    /// Receives what is there; false at the end of the stream (or a reset).
    private func receive() async throws -> Bool {
        let descriptor = descriptor
        let chunk: Data? = try await Self.blocking {
            var bytes = [UInt8](repeating: 0, count: 65536)
            let count = recv(descriptor, &bytes, bytes.count, 0)
            if count > 0 { return Data(bytes[0..<count]) }
            if count == 0 || errno == ECONNRESET { return nil }
            throw Failure(description: "recv() failed or timed out: errno \(errno)")
        }
        guard let chunk else { return false }
        buffer.append(chunk)
        return true
    }

    private func parse() throws -> Response? {
        guard let end = buffer.range(of: Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "not an HTTP response: \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard buffer.distance(from: end.upperBound, to: buffer.endIndex) >= length else { return nil }
        let bodyEnd = buffer.index(end.upperBound, offsetBy: length)
        let body = Data(buffer[end.upperBound..<bodyEnd])
        buffer = Data(buffer[bodyEnd...])
        return Response(status: status, headers: headers, body: body)
    }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await onOwnThread(body)
    }
}

/// `send(2)`, under a name the connection's own `send` methods do not hide.
private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(descriptor, bytes, count, flags)
}
