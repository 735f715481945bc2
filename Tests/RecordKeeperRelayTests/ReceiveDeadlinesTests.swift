import Foundation
@testable import RecordKeeperRelay
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The deadlines a connection lives by, checked by the watchdog's pass at a given time: a
/// response queued must be taken within the send timeout plus a second per 64 KiB, as a
/// request's headers and body must arrive within theirs.
@Suite struct ReceiveDeadlinesTests {
    /// A connected pair of sockets; the first stands for a connection's socket.
    private static func socketPair() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        #if canImport(Glibc)
            let type = Int32(SOCK_STREAM.rawValue)
        #else
            let type = SOCK_STREAM
        #endif
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { throw POSIXError(.EMFILE) }
        return (ends[0], ends[1])
    }

    /// Whether the peer of a socket that was shut down reads the end of the stream at once.
    private static func peerSeesEnd(_ peer: Int32) -> Bool {
        var entry = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(peer, &byte, 1, 0) == 0
    }

    @Test func `a response not taken within the send timeout plus a second per 64 KiB is cut off`() throws {
        let (socket, peer) = try Self.socketPair()
        defer {
            close(socket)
            close(peer)
        }
        let lines = LockedLines()
        let deadlines = ReceiveDeadlines(
            headerTimeout: .seconds(10), bodyTimeout: .seconds(120), sendTimeout: .seconds(120), idleTimeout: .seconds(30),
            log: { lines.append($0) })
        deadlines.connectionStarted(1, socket: socket)
        deadlines.headersReceived(1)
        deadlines.handlerStarted(1)
        #expect(deadlines.cutOverdue(now: .now + .seconds(3600)) == 0, "a handler may take its time (a held pull)")

        deadlines.responseQueued(1, bytes: 8 << 20)  // 128 s more for 8 MiB
        #expect(deadlines.cutOverdue(now: .now + .seconds(240)) == 0)
        #expect(!Self.peerSeesEnd(peer))
        #expect(deadlines.cutOverdue(now: .now + .seconds(260)) == 1)
        #expect(Self.peerSeesEnd(peer), "the socket was shut down")
        #expect(lines.all == ["event=send_timeout waiting_for=response action=disconnected"])
    }

    @Test func `a response taken in time leaves the connection to its idle deadline`() throws {
        let (socket, peer) = try Self.socketPair()
        defer {
            close(socket)
            close(peer)
        }
        let deadlines = ReceiveDeadlines(
            headerTimeout: .seconds(10), bodyTimeout: .seconds(120), sendTimeout: .seconds(1), idleTimeout: .seconds(30),
            log: { _ in })
        deadlines.connectionStarted(1, socket: socket)
        deadlines.responseQueued(1, bytes: 10)
        deadlines.requestCompleted(1)
        #expect(deadlines.cutOverdue(now: .now + .seconds(20)) == 0)
        #expect(deadlines.cutOverdue(now: .now + .seconds(41)) == 1)
    }
}

/// Log lines collected from any thread.
private final class LockedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
