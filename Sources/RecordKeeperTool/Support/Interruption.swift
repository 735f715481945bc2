import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns SIGINT, SIGTERM and SIGHUP, while a command creates something it must undo when
/// stopped (a new store, a partial export), into cancellation of that work, so the command
/// can roll back and remove what it created; then the tool dies of the signal as it would have
/// (`reraiseIfReceived()`), and a shell sees the usual status (130 for Ctrl-C).
///
/// Outside such a window the signals keep their default action: nothing needs undoing there
/// (reads, and writes into an existing store, which SQLite rolls back by itself).
/// SIGKILL cannot be caught; what it leaves is described in docs/CLI.md.
///
/// How: a `sigaction` handler writes the signal's number to a self-pipe (the one thing a
/// handler may safely do); a dispatch source reading the pipe cancels the work.
///
/// `@unchecked Sendable`: `received` and `cancelWork` are reached only with `lock` held;
/// `pipe`, `reader` and `previous` only by the command that created the value, on its task.
final class Interruption: @unchecked Sendable {
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private let activity: String
    private let lock = NSLock()
    private var received: Int32?
    private var cancelWork: (@Sendable () -> Void)?
    /// The self-pipe the signal handler writes the signal's number to, and its reader.
    private var pipe: (read: Int32, write: Int32)?
    private var reader: (any DispatchSourceRead)?
    private var previous: [Int32: sigaction] = [:]

    /// Starts catching the signals; `activity` finishes "recordkeeper: interrupted: …".
    ///
    /// A signal the process inherited as ignored (`nohup`, a background job of a script)
    /// stays ignored. When the self-pipe cannot be made the signals keep their default action
    /// (nothing is undone then, as before).
    init(activity: String) {
        self.activity = activity
        var ends: [Int32] = [-1, -1]
        guard Glibc_pipe(&ends) == 0 else { return }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        pipe = (ends[0], ends[1])
        interruptionPipeWriter = ends[1]
        let readEnd = ends[0]
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: .global())
        source.setEventHandler { [weak self] in self?.drain(readEnd) }
        source.setCancelHandler { close(readEnd) }  // after the last event handler ran
        source.resume()
        reader = source
        for number in Self.signals {
            var old = sigaction()
            guard sigaction(number, nil, &old) == 0, !Self.isIgnored(old) else { continue }
            var action = sigaction()
            Self.setHandler(&action)
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            if sigaction(number, &action, nil) == 0 { previous[number] = old }
        }
    }

    /// The signal received, if any.
    var signalReceived: Int32? { lock.withLock { received } }

    /// Runs `body` as a task that a signal cancels (as does cancelling the caller).
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let work = Task { try await body() }
        let alreadyReceived = lock.withLock { () -> Bool in
            cancelWork = { work.cancel() }
            return received != nil
        }
        if alreadyReceived { work.cancel() }
        defer { lock.withLock { cancelWork = nil } }
        return try await withTaskCancellationHandler {
            try await work.value
        } onCancel: {
            work.cancel()
        }
    }

    /// Stops catching: every signal gets back the action it had.
    func end() {
        for (number, old) in previous {
            var restored = old
            sigaction(number, &restored, nil)
        }
        previous.removeAll()
        if let pipe {
            interruptionPipeWriter = -1
            close(pipe.write)
            self.pipe = nil
        }
        reader?.cancel()  // closes the read end
        reader = nil
    }

    /// After the work was undone: if a signal arrived, ends the process with it.
    func reraiseIfReceived() {
        guard let number = signalReceived else { return }
        end()
        signal(number, SIG_DFL)
        // Worker threads block signals: unblock it here, and send it to the process, so that
        // some thread takes it and the default action ends the process.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        kill(getpid(), number)
    }

    /// On the reader's queue: the handler wrote a signal's number into the pipe.
    private func drain(_ readEnd: Int32) {
        var byte: UInt8 = 0
        guard read(readEnd, &byte, 1) == 1 else { return }
        let number = Int32(byte)
        let (first, cancel) = lock.withLock { () -> (Bool, (@Sendable () -> Void)?) in
            guard received == nil else { return (false, nil) }
            received = number
            return (true, cancelWork)
        }
        guard first else { return }
        StandardError.writeLine("recordkeeper: interrupted (\(Self.name(number))): \(activity)")
        cancel?()
    }

    private static func isIgnored(_ action: sigaction) -> Bool {
        #if canImport(Darwin)
            let handler = action.__sigaction_u.__sa_handler
        #else
            let handler = action.__sigaction_handler.sa_handler
        #endif
        guard let handler else { return false }
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    private static func setHandler(_ action: inout sigaction) {
        #if canImport(Darwin)
            action.__sigaction_u.__sa_handler = interruptionSignalHandler
        #else
            action.__sigaction_handler.sa_handler = interruptionSignalHandler
        #endif
    }

    private static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }
}

/// The write end of the current `Interruption`'s self-pipe, for the signal handler (-1: none).
/// Set before the handler is installed and cleared after it is removed; the handler only
/// reads it.
nonisolated(unsafe) private var interruptionPipeWriter: Int32 = -1

/// The signal handler: async-signal-safe, it only writes the signal's number to the pipe.
private func interruptionSignalHandler(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(interruptionPipeWriter, &byte, 1)
    errno = saved
}

private func Glibc_pipe(_ ends: inout [Int32]) -> Int32 {
    pipe(&ends)
}
