import TestHelpers
import HarnessSupport
import Foundation
import RecordKeeper
import Testing

/// The outbox across process deaths and between processes: the helper is killed with SIGKILL
/// while it enqueues and delivers; afterwards every operation it confirmed is delivered or
/// pending, none is lost or partial (an operation without its record, or the reverse), and
/// per ordering key the first deliveries come in enqueue order. Two processes delivering from
/// one store never deliver one operation at the same time.
@Suite struct OutboxCrashTests {
    /// Kills per run: 24 in CI (RECORDKEEPER_OUTBOX_KILLS=n to change), 200 in long mode.
    static let kills = Int(environmentInteger("RECORDKEEPER_OUTBOX_KILLS") ?? (isLongMode ? 200 : 24))

    @Test func `operations survive a delivering process killed at random moments`() async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        let seed = environmentInteger("RECORDKEEPER_CRASH_SEED") ?? 20_261_130
        var timing = SplitMix64(seed: seed)
        try await withTemporaryDirectory { directory in
            let storeURL = directory.appendingPathComponent("outbox.sqlite")
            let received = directory.appendingPathComponent("received.log")
            var confirmed: [String] = []
            var killed = 0
            var runs = 0
            // Runs until enough of them were killed mid-way: on a fast machine a run can finish
            // before its kill, and it then counts as a run, not a kill. Bounded at 3× the kills.
            while killed < Self.kills, runs < Self.kills * 3 {
                let run = runs
                runs += 1
                // Each run's clock is 10 minutes later than the last: leases (2 min) of killed
                // runs have ended, as they would have for a process started that much later.
                let child = try ChildProcess(
                    executable: helper,
                    arguments: [
                        "outbox", "--store", storeURL.path, "--received", received.path, "--run", "\(run)",
                        "--count", "150", "--clock-offset", "\(run * 600)",
                    ],
                    in: directory)
                try child.start()
                try await child.waitForOutput()
                // Killed 0–40 ms after its first confirmed enqueue: far before its 150 enqueues
                // (each an fsync'd commit) and deliveries are done.
                try await Task.sleep(for: .milliseconds(timing.below(40)))
                child.kill()
                await child.waitForExit()
                let lines = try child.output().split(separator: "\n").map(String.init)
                try child.removeFiles()
                if child.process.terminationReason == .uncaughtSignal { killed += 1 } else {
                    #expect(lines.last == "drained", "the helper failed: \(lines.suffix(2))")
                }
                confirmed += lines.filter { $0.hasPrefix("enqueued ") }.map { String($0.dropFirst(9)) }
            }
            // A processor started after all that delivers whatever is left.
            let store = RecordStore(url: storeURL)
            #expect(try await store.integrityCheck() == ["ok"])
            let finalOffset = Double(runs + 1) * 600
            let final = OutboxProcessor(
                store: store, transport: FileLogTransport(url: received),
                now: { Date().addingTimeInterval(finalOffset) })
            try await final.deliverDue()
            #expect(try await store.outbox.pending().isEmpty)
            #expect(try await store.outbox.deadLetters().isEmpty)

            let deliveries = try String(decoding: Data(contentsOf: received), as: UTF8.self)
                .split(separator: "\n").map { String($0.split(separator: " ")[0]) }
            let delivered = Set(deliveries)
            let records = try #require(try await store.read("carts"))
            let lost = Set(confirmed).subtracting(delivered)
            #expect(lost.isEmpty, "confirmed operations never delivered: \(lost.prefix(5))")
            #expect(Set(records.keys) == delivered, "every record has its operation delivered and every delivered operation its record")
            // Per key, the first delivery of each operation follows enqueue order ("run-number").
            for key in 0..<3 {
                let firsts = deliveries.reduce(into: [String]()) { order, id in if !order.contains(id) { order.append(id) } }
                    .compactMap { id in records[id].map { String(decoding: $0, as: UTF8.self) } }
                    .filter { Int($0.split(separator: "-")[1])! % 3 == key }
                    .map { $0.split(separator: "-").map { Int($0)! } }
                #expect(firsts == firsts.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }, "key-\(key) out of order")
            }
            #expect(killed >= min(20, Self.kills), "only \(killed) of \(runs) runs were killed before they finished")
            reportFigure(
                "outbox crash: \(killed) kills, \(confirmed.count) confirmed enqueues, \(delivered.count) operations "
                    + "delivered (\(deliveries.count - delivered.count) again after a kill), 0 lost, 0 partial")
        }
    }

    @Test func `two processes delivering from one store never deliver an operation twice at once`() async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        try await withTemporaryDirectory { directory in
            let storeURL = directory.appendingPathComponent("shared.sqlite")
            let received = directory.appendingPathComponent("received.log")
            let go = directory.appendingPathComponent("go")
            let store = RecordStore(url: storeURL)
            let messages = (0..<120).map {
                OutboxMessage(kind: "op", payload: Data("\($0)".utf8), orderingKey: $0 % 2 == 0 ? "key-\($0 % 6)" : nil)
            }
            try await store.enqueue(messages)
            let children = try (0..<2).map { _ in
                try ChildProcess(
                    executable: helper,
                    arguments: [
                        "deliver", "--store", storeURL.path, "--received", received.path, "--go", go.path,
                        "--parties", "2",
                    ],
                    in: directory)
            }
            for child in children { try child.start() }
            for child in children { try await child.waitForOutput() }
            #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
            for child in children {
                await child.waitForExit()
                let errors = try child.errorOutput()
                #expect(child.process.terminationStatus == 0, "\(errors)")
            }
            let lines = try String(decoding: Data(contentsOf: received), as: UTF8.self).split(separator: "\n")
            var inFlight: [String: String] = [:]
            var started: [String: Int] = [:]
            var pids = Set<String>()
            for line in lines {
                let parts = line.split(separator: " ").map(String.init)
                let (event, id, pid) = (parts[0], parts[1], parts[2])
                pids.insert(pid)
                if event == "start" {
                    #expect(inFlight[id] == nil, "\(id) was delivered by two processes at once")
                    inFlight[id] = pid
                    started[id, default: 0] += 1
                } else {
                    inFlight[id] = nil
                }
            }
            #expect(started.count == messages.count)
            // Certain, not likely: no delivery ends before both processes started one.
            #expect(pids.count == 2, "both processes delivered some")
            #expect(started.values.allSatisfy { $0 == 1 }, "each operation delivered once")
            #expect(try await store.outbox.pending().isEmpty)
            reportFigure("outbox two processes: \(messages.count) operations, each delivered once, by \(pids.count) processes")
        }
    }
}

/// Appends "ID PID" lines, like the helper's transport; one delivery at a time appends, so
/// concurrent deliveries never write over each other's line.
///
/// `@unchecked Sendable`: the file is only written inside `lock`.
final class FileLogTransport: OutboxTransport, @unchecked Sendable {
    let url: URL
    private let lock = NSLock()

    init(url: URL) { self.url = url }

    func deliver(_ operation: OutboxOperation) async throws {
        try lock.withLock {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("\(operation.id.uuidString) \(getpid())\n".utf8))
            try handle.close()
        }
    }
}
