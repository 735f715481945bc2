import Foundation
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outbox modes of the helper.
///
///     recordkeeper-crashtest outbox --store PATH --received PATH --run R --count N [--clock-offset S]
///         Enqueues N operations, each with a record in collection "carts" (key = the operation
///         id) in one `apply`, payload "R-i", ordering key "key-(i % 3)", printing
///         "enqueued ID" after each commit; then delivers until nothing is due, printing
///         "drained". The transport appends "ID PID" to the received file. The processor's
///         clock runs S seconds ahead, so leases left by earlier (killed) runs have ended.
///     recordkeeper-crashtest deliver --store PATH --received PATH [--go PATH] [--parties N] [--clock-offset S]
///         Only delivers (for two processes on one store): prints "ready" once the store is
///         open, waits until the file --go exists, delivers, and prints "drained" at the end.
///         The transport logs "start ID PID" and "end ID PID" around a 2 ms pause. With
///         --parties N no delivery ends before N processes have logged a start (a barrier, so
///         each of them delivers some; it fails after 60 s).
enum OutboxMode {
    /// Appends lines to a file with one write(2) each (O_APPEND: lines from several processes
    /// never interleave), so a line written is on its way to disk even if the process is killed.
    struct Log: @unchecked Sendable {  // a file descriptor: write(2) is safe from any thread
        let descriptor: Int32

        init(path: String) {
            descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            if descriptor < 0 { fail("could not open \(path)") }
        }

        func write(_ line: String) {
            let bytes = Array((line + "\n").utf8)
            let written = bytes.withUnsafeBytes { Glibc_write(descriptor, $0.baseAddress, $0.count) }
            if written != bytes.count { fail("could not append to the log") }
        }
    }

    /// Holds deliveries until `parties` processes have logged a start in the shared log.
    actor Barrier {
        let parties: Int
        let path: String
        private var passed = false

        init(parties: Int, path: String) {
            self.parties = parties
            self.path = path
        }

        func wait() async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while !passed {
                let lines = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self).split(separator: "\n")
                let starters = Set(lines.compactMap { line -> Substring? in
                    let fields = line.split(separator: " ")
                    return fields.count == 3 && fields[0] == "start" ? fields[2] : nil
                })
                if starters.count >= parties {
                    passed = true
                } else {
                    if ContinuousClock.now > deadline { fail("only \(starters.count) of \(parties) processes started a delivery") }
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
        }
    }

    struct LoggingTransport: OutboxTransport {
        let log: Log
        let bracketed: Bool
        var barrier: Barrier? = nil

        func deliver(_ operation: OutboxOperation) async throws {
            if bracketed {
                log.write("start \(operation.id.uuidString) \(getpid())")
                try await barrier?.wait()
                // Widens the window in which a second delivery of the operation would overlap.
                try await Task.sleep(for: .milliseconds(2))
                log.write("end \(operation.id.uuidString) \(getpid())")
            } else {
                log.write("\(operation.id.uuidString) \(getpid())")
            }
        }
    }

    static func enqueueAndDeliver(store: RecordStore, options: [String: String]) async throws {
        guard let received = options["received"], let run = options["run"], let count = options["count"].flatMap(Int.init) else {
            fail("outbox needs --received PATH --run R --count N")
        }
        let offset = options["clock-offset"].flatMap(Double.init) ?? 0
        let processor = OutboxProcessor(
            store: store, transport: LoggingTransport(log: Log(path: received), bracketed: false),
            now: { Date().addingTimeInterval(offset) })
        for number in 0..<count {
            let message = OutboxMessage(kind: "crash.op", payload: Data("\(run)-\(number)".utf8), orderingKey: "key-\(number % 3)")
            try await store.apply(
                "carts", changes: RecordChanges(upserts: [message.id.uuidString: Data("\(run)-\(number)".utf8)]),
                enqueue: [message])
            say("enqueued \(message.id.uuidString)")
            // Deliver as we go, so kills land in enqueues and in deliveries alike.
            if number % 5 == 4 { try await processor.deliverDue() }
        }
        while try await processor.deliverDue().delivered > 0 {}
        say("drained")
    }

    static func deliverOnly(store: RecordStore, options: [String: String]) async throws {
        guard let received = options["received"] else { fail("deliver needs --received PATH") }
        let offset = options["clock-offset"].flatMap(Double.init) ?? 0
        let barrier = options["parties"].flatMap(Int.init).map { Barrier(parties: $0, path: received) }
        let processor = OutboxProcessor(
            store: store, transport: LoggingTransport(log: Log(path: received), bracketed: true, barrier: barrier),
            now: { Date().addingTimeInterval(offset) })
        // Opened and ready: wait for the test's go, so that both processes start together.
        _ = try await store.outbox.pending()
        say("ready")
        if let go = options["go"] {
            while !FileManager.default.fileExists(atPath: go) { try await Task.sleep(for: .milliseconds(1)) }
        }
        while try await !store.outbox.pending().isEmpty {
            try await processor.deliverDue()
        }
        say("drained")
    }
}

private func Glibc_write(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
