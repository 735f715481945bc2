import Foundation
import RecordKeeperSync

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The connections of a server and the time each may still take to deliver its request or
/// take its response: what cuts off a slow-loris client.
///
/// libmicrohttpd's own timeout (`MHD_OPTION_CONNECTION_TIMEOUT`) counts from the last byte
/// received, so a client that sends its headers one byte every few seconds would hold a
/// connection forever. Here each connection has a deadline instead: the end of its headers
/// within ``HTTPServer/Configuration/headerTimeout`` of its start (or of its previous request's
/// end plus the idle timeout), the end of its body within ``HTTPServer/Configuration/bodyTimeout``
/// of the headers; none while a handler runs; the end of its response within
/// ``HTTPServer/Configuration/sendTimeout`` (plus a second per 64 KiB) of being queued. A
/// watchdog task checks every fraction of the
/// header timeout and shuts down (`shutdown(2)`) the socket of a connection past its deadline:
/// libmicrohttpd then reads the end of the stream and closes the connection as usual.
///
/// The socket is shut down, never closed, and only under the lock that the connection's
/// "closed" notification also takes to remove it, which libmicrohttpd sends before it closes the
/// descriptor: so a descriptor number that was already reused is never touched.
final class ReceiveDeadlines: Sendable {
    private struct Entry: Sendable {
        let socket: Int32
        var deadline: ContinuousClock.Instant?
        var waitingFor: String
        var cut = false
    }

    private let headerTimeout: Duration
    private let bodyTimeout: Duration
    private let sendTimeout: Duration
    private let idleTimeout: Duration
    private let log: @Sendable (String) -> Void
    private let entries = Protected<[Int: Entry]>([:])
    private let watchdog = Protected<Task<Void, Never>?>(nil)

    init(
        headerTimeout: Duration, bodyTimeout: Duration, sendTimeout: Duration, idleTimeout: Duration,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.sendTimeout = sendTimeout
        self.idleTimeout = idleTimeout
        self.log = log
    }

    /// Open connections.
    var count: Int { entries.withLock { $0.count } }

    func startWatchdog() {
        let tick = min(max(headerTimeout / 5, .milliseconds(10)), .milliseconds(500))
        let task = Task { [weak self] in
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: tick)
                } catch {
                    return  // cancelled: the server stopped
                }
                self?.cutOverdue(now: .now)
            }
        }
        watchdog.withLock { $0 = task }
    }

    func stopWatchdog() {
        watchdog.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    func connectionStarted(_ key: Int, socket: Int32) {
        let entry = Entry(socket: socket, deadline: .now + headerTimeout, waitingFor: "headers")
        entries.withLock { $0[key] = entry }
    }

    func connectionClosed(_ key: Int) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// A request line arrived: its headers are due within the header timeout.
    func requestLineReceived(_ key: Int) {
        let due = ContinuousClock.now + headerTimeout
        entries.withLock { entries in
            guard var entry = entries[key] else { return }
            entry.deadline = min(entry.deadline ?? due, due)
            entry.waitingFor = "headers"
            entries[key] = entry
        }
    }

    func headersReceived(_ key: Int) {
        set(key, deadline: .now + bodyTimeout, waitingFor: "body")
    }

    func handlerStarted(_ key: Int) {
        set(key, deadline: nil, waitingFor: "handler")
    }

    /// A response of `bytes` was queued: it is due within the send timeout plus a second per
    /// 64 KiB.
    func responseQueued(_ key: Int, bytes: Int) {
        set(key, deadline: .now + sendTimeout + .seconds(bytes / 65_536), waitingFor: "response")
    }

    /// A request completed: the next one's headers are due after the idle time plus the header
    /// timeout (libmicrohttpd closes an idle connection before that).
    func requestCompleted(_ key: Int) {
        set(key, deadline: .now + idleTimeout + headerTimeout, waitingFor: "headers")
    }

    private func set(_ key: Int, deadline: ContinuousClock.Instant?, waitingFor: String) {
        entries.withLock { entries in
            guard entries[key] != nil else { return }
            entries[key]?.deadline = deadline
            entries[key]?.waitingFor = waitingFor
        }
    }

    /// Shuts down the sockets of connections past their deadline; returns how many.
    @discardableResult
    func cutOverdue(now: ContinuousClock.Instant) -> Int {
        let cut = entries.withLock { entries -> [String] in
            var cut: [String] = []
            for (key, entry) in entries where !entry.cut {
                guard let deadline = entry.deadline, deadline < now else { continue }
                _ = shutdown(entry.socket, Int32(SHUT_RDWR))
                entries[key]?.cut = true
                cut.append(entry.waitingFor)
            }
            return cut
        }
        for what in cut {
            log("event=\(what == "response" ? "send_timeout" : "receive_timeout") waiting_for=\(what) action=disconnected")
        }
        return cut.count
    }
}
