import Foundation
import HarnessSupport
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// recordkeeper-crashtest: a helper process for RecordKeeperReliabilityTests.
///
///     recordkeeper-crashtest batches --store PATH --seed S [--durability full|normal] [--count N]
///         Runs record-level batches (see BatchPlan) until killed (or N batches), printing each
///         batch id on its own line only after the store confirmed the commit.
///     recordkeeper-crashtest writer --store PATH --prefix P --count N
///         Puts N records "P-0" … in collection "shared" (alternating put, apply and write) and
///         prints "done"; any error goes to stderr with exit status 1.
///     recordkeeper-crashtest remover --store PATH --prefix P --count N
///         Removes the even-numbered records "P-0", "P-2" … below N from collection "shared" in
///         one transaction and prints "done" (for the change-stream tests).
///     recordkeeper-crashtest outbox|deliver …
///         Enqueues and delivers outbox operations (see OutboxMode.swift).
///     recordkeeper-crashtest sync --store PATH --server CONNINFO --space S --run R [--count N]
///         Writes and syncs through PostgreSQL in a loop (see SyncMode.swift).
///     recordkeeper-crashtest migrate --store PATH [--go PATH] [--busy-timeout S]
///         Opens the store for writing, migrating an older format (see MigrateMode.swift).
///
/// Output is written with write(2) directly, so nothing confirmed sits in a buffer when the
/// process is killed.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("recordkeeper-crashtest: \(message)\n".utf8))
    exit(2)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first else { fail("usage: recordkeeper-crashtest batches|writer|remover --store PATH …") }
var options: [String: String] = [:]
var index = 1
while index < arguments.count {
    let name = arguments[index]
    guard name.hasPrefix("--"), index + 1 < arguments.count else { fail("unexpected argument \(name)") }
    options[String(name.dropFirst(2))] = arguments[index + 1]
    index += 2
}
guard let storePath = options["store"] else { fail("--store PATH is required") }
let durability: Durability
switch options["durability"] ?? "full" {
case "full": durability = .full
case "normal": durability = .normal
case let other: fail("unknown durability \(other)")
}
let store = RecordStore(url: URL(fileURLWithPath: storePath), options: .init(durability: durability))

do {
    switch mode {
    case "batches":
        guard let seedText = options["seed"], let seed = UInt64(seedText) else { fail("--seed S (an integer) is required") }
        let limit = options["count"].flatMap(Int.init) ?? Int.max
        try await runBatches(seed: seed, limit: limit)
    case "writer":
        guard let prefix = options["prefix"], let count = options["count"].flatMap(Int.init) else {
            fail("writer needs --prefix P --count N")
        }
        try await runWriter(prefix: prefix, count: count)
        say("done")
    case "remover":
        guard let prefix = options["prefix"], let count = options["count"].flatMap(Int.init) else {
            fail("remover needs --prefix P --count N")
        }
        var changes = RecordChanges()
        for number in stride(from: 0, to: count, by: 2) { changes["\(prefix)-\(number)"] = nil }
        try await store.apply("shared", changes: changes)
        say("done")
    case "outbox":
        try await OutboxMode.enqueueAndDeliver(store: store, options: options)
    case "deliver":
        try await OutboxMode.deliverOnly(store: store, options: options)
    case "sync":
        try await SyncMode.run(store: store, options: options)
    case "migrate":
        try await MigrateMode.run(path: storePath, options: options)
    default:
        fail("unknown mode \(mode)")
    }
} catch {
    FileHandle.standardError.write(Data("recordkeeper-crashtest: \(String(describing: error))\n".utf8))
    exit(1)
}

func runBatches(seed: UInt64, limit: Int) async throws {
    var random = SplitMix64(seed: seed)
    var previousWrite: String?
    var number = 0
    while number < limit {
        let plan = BatchPlan.make(seed: seed, number: number, previousWrite: previousWrite, random: &random)
        switch plan.kind {
        case .apply:
            var changes = RecordChanges()
            for record in plan.records { changes[record.key] = record.payload }
            try await store.apply(plan.records[0].collection, changes: changes)
        case .write:
            let records = plan.records.map { ($0.collection, $0.key, $0.payload) }
            let removed = plan.removedTail
            try await store.write { tx in
                for (collection, key, payload) in records where collection != BatchPlan.tailCollection {
                    try tx.put(collection, key: key, data: payload)
                }
                var tail = RecordChanges()
                if let removed { tail[removed] = nil }
                for (collection, key, payload) in records where collection == BatchPlan.tailCollection {
                    tail[key] = payload
                }
                try tx.apply(BatchPlan.tailCollection, changes: tail)
            }
            previousWrite = plan.id
        }
        // Only now is the batch confirmed.
        say(plan.id)
        number += 1
    }
}

func runWriter(prefix: String, count: Int) async throws {
    for number in 0..<count {
        let key = "\(prefix)-\(number)"
        let payload = Data("\(key) written by process \(getpid())".utf8)
        switch number % 3 {
        case 0:
            try await store.put("shared", key: key, data: payload)
        case 1:
            var changes = RecordChanges()
            changes[key] = payload
            try await store.apply("shared", changes: changes)
        default:
            try await store.write { tx in
                try tx.put("shared", key: key, data: payload)
                try tx.put("\(prefix)-own", key: key, data: payload)
            }
        }
        if number % 50 == 0 {
            // Reads interleave with the other process's writes too.
            _ = try await store.value("shared", key: key)
        }
    }
}
