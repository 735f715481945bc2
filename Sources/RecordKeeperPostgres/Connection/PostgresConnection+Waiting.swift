internal import CLibPQ
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Wakes a connection that waits for the server, from another thread (a task cancellation
/// handler): a pipe whose read end every wait polls beside the connection's socket.
///
/// `@unchecked Sendable`: the two descriptors are set once in `init` and closed in `deinit`;
/// `write(2)` and `read(2)` on them may come from any thread.
final class WakePipe: @unchecked Sendable {
    let readEnd: Int32
    private let writeEnd: Int32

    init() throws(PostgresError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw PostgresError(
                .connection, operation: "connect",
                message: "could not create the pipe that wakes a wait for the server (\(String(cString: strerror(errno))))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Makes the current or next wait return. A full pipe (EAGAIN) is awake already.
    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Forgets earlier wake-ups.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}

/// A request to cancel the statement a connection runs (`PQcancel`), usable from any thread.
///
/// `@unchecked Sendable`: the `PGcancel` object is made once, on the connection's queue, and
/// only read afterwards; libpq documents `PQcancel` as safe to call from other threads with
/// it. It is freed in `deinit`, when no one holds the request.
final class CancelRequest: @unchecked Sendable {
    private let handle: OpaquePointer

    init?(_ connection: OpaquePointer) {
        guard let handle = PQgetCancel(connection) else { return nil }
        self.handle = handle
    }

    deinit {
        PQfreeCancel(handle)
    }

    /// Asks the server to cancel the statement, from a background queue: `PQcancel` opens a
    /// connection of its own and waits for the server, which a stalled or unreachable server
    /// may not answer for long. The request object lives until it returns.
    func send() {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(handle, &message, Int32(message.count))
        }
    }
}

/// The statement a connection waits for, as a cancellation handler sees it.
///
/// A cancellation only marks the statement and wakes its wait; the waiting thread, which
/// knows the statement is still running, cancels it on the server and gives the session up.
/// A `PQcancel` sent from the handler itself could arrive after the statement had ended and
/// the connection had gone back to its pool, and cancel the next request's statement.
///
/// `@unchecked Sendable`: `isRunning` and `cancelRequested` are only reached with `lock` held.
final class RunningStatement: @unchecked Sendable {
    private let lock = NSLock()
    private var isRunning = false
    private var cancelRequested = false
    let wake: WakePipe

    init(wake: WakePipe) {
        self.wake = wake
    }

    func begin() {
        lock.withLock {
            isRunning = true
            cancelRequested = false
        }
    }

    func end() {
        lock.withLock {
            isRunning = false
            cancelRequested = false
        }
    }

    /// Whether ``cancel()`` was called while the current statement runs.
    var isCancelRequested: Bool { lock.withLock { cancelRequested } }

    /// From any thread (a cancellation handler): marks the running statement, if any, to be
    /// cancelled, and wakes the wait, which then cancels it (as it does when its task is
    /// cancelled).
    func cancel() {
        lock.withLock { if isRunning { cancelRequested = true } }
        wake.wake()
    }
}

/// How a wait for the connection's socket ended.
enum PostgresWait {
    case ready
    case timedOut
    case cancelled
}

extension PostgresConnection {
    /// Waits until the socket is ready for `events` (`POLLIN`, `POLLOUT`), the deadline passes
    /// or the task is cancelled (the cancellation handler wakes the pipe). Never blocks past the
    /// deadline; without one, waits as long as the server takes.
    ///
    /// With `running`, a statement's wait: ``RunningStatement/cancel()`` ends it as the task's
    /// cancellation does.
    static func wait(
        socket: Int32, for events: Int16, deadline: ContinuousClock.Instant?, running: RunningStatement
    ) -> PostgresWait {
        wait(socket: socket, for: events, deadline: deadline, wake: running.wake, running: running)
    }

    static func wait(
        socket: Int32, for events: Int16, deadline: ContinuousClock.Instant?, wake: WakePipe,
        running: RunningStatement? = nil
    ) -> PostgresWait {
        func cancelled() -> Bool { Task.isCancelled || running?.isCancelRequested == true }
        while true {
            if cancelled() { return .cancelled }
            var timeout: Int32 = -1
            if let deadline {
                let remaining = deadline - .now
                if remaining <= .zero { return .timedOut }
                let (seconds, attoseconds) = remaining.components
                let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
                timeout = Int32(clamping: milliseconds)
            }
            var descriptors = [
                pollfd(fd: socket, events: events, revents: 0),
                pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0),
            ]
            let count = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if count < 0 {
                if errno == EINTR { continue }
                return .ready  // let libpq find and report what is wrong with the socket
            }
            if descriptors[1].revents != 0 {
                wake.drain()
                continue  // checks cancellation first
            }
            // Cancelled while the socket became ready: the cancellation is what the wait
            // reports (the statement is given up either way).
            if cancelled() { return .cancelled }
            if descriptors[0].revents != 0 { return .ready }
        }
    }

    /// Sends one statement and waits for its result, within `deadline`: non-blocking libpq
    /// (`PQsendQueryParams`, `PQflush`, `PQconsumeInput`), so a server that stops answering,
    /// or stops reading what is sent, never holds the caller past the deadline.
    ///
    /// On the deadline or the task's cancellation the statement is cancelled on the server
    /// (`PQcancel`) and the connection given up (its socket shut down: the server rolls back
    /// what the session had open when it notices), so that nothing waits for an answer that
    /// may never come; the next request connects again.
    func sendAndReceive(
        _ connection: OpaquePointer, operation: String,
        send: (OpaquePointer) -> Int32
    ) throws(PostgresError) -> OpaquePointer? {
        running.wake.drain()
        if Task.isCancelled { throw cancelledError(operation) }
        running.begin()
        defer { running.end() }
        guard send(connection) == 1 else {
            throw PostgresError(
                PQstatus(connection) == CONNECTION_OK ? .statement : .connection, operation: operation,
                message: Self.message(of: connection))
        }
        // Everything is written before the answer is read (a large push may not fit the
        // socket's buffer at once).
        while true {
            let flushed = PQflush(connection)
            if flushed == 0 { break }
            if flushed < 0 { throw lostMidStatement(connection, operation: operation) }
            try waitOrGiveUp(connection, for: Int16(POLLIN | POLLOUT), operation: operation)
            if PQconsumeInput(connection) == 0 { throw lostMidStatement(connection, operation: operation) }
        }
        var last: OpaquePointer?
        while true {
            while PQisBusy(connection) == 1 {
                try waitOrGiveUp(connection, for: Int16(POLLIN), operation: operation, clearing: last)
                if PQconsumeInput(connection) == 0 {
                    if let last { PQclear(last) }
                    throw lostMidStatement(connection, operation: operation)
                }
            }
            guard let result = PQgetResult(connection) else { break }
            // One statement gives one result; keep the last (an error ends the statement).
            if let last { PQclear(last) }
            last = result
        }
        return last
    }

    private func waitOrGiveUp(
        _ connection: OpaquePointer, for events: Int16, operation: String, clearing pending: OpaquePointer? = nil
    ) throws(PostgresError) {
        switch Self.wait(socket: PQsocket(connection), for: events, deadline: deadline, running: running) {
        case .ready:
            return
        case .timedOut:
            if let pending { PQclear(pending) }
            giveUp(connection)
            throw PostgresError(
                .timeout, operation: operation,
                message: "the server did not answer within \(timeoutDescription); the statement was cancelled and the "
                    + "connection given up")
        case .cancelled:
            if let pending { PQclear(pending) }
            giveUp(connection)
            throw cancelledError(operation)
        }
    }

    /// A failed send or read in the middle of a statement: libpq may still take the session
    /// as open (a read error outside its list of lost connections), mid-statement, so that
    /// every later statement would fail with "another command is already in progress". The
    /// session is given up; the next request connects again.
    private func lostMidStatement(_ connection: OpaquePointer, operation: String) -> PostgresError {
        let error = PostgresError(.connection, operation: operation, message: Self.message(of: connection))
        needsReset = true
        return error
    }

    private func cancelledError(_ operation: String) -> PostgresError {
        PostgresError(.cancelled, operation: operation, message: "the task was cancelled; the statement was cancelled")
    }

    /// Cancels the running statement on the server and shuts the socket down, so the session
    /// is over for both sides; the next request connects again.
    private func giveUp(_ connection: OpaquePointer) {
        CancelRequest(connection)?.send()
        let socket = PQsocket(connection)
        if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        needsReset = true
    }
}
