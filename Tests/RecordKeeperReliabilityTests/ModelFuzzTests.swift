import TestHelpers
import HarnessSupport
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

/// Model-based fuzzing: random sequences of writes and reads, with awkward keys and payloads
/// and injected failures, run against a store and against a plain dictionary that says what
/// the store must hold. The two are compared after every step, in full now and then, and
/// after closing and reopening the store.
///
/// Deterministic: a failure prints its seed and step; replay with
/// `SWIFT_DETERMINISTIC_HASHING=1 RECORDKEEPER_FUZZ_SEED=<seed> swift test --filter ModelFuzzTests`
/// (deterministic hashing keeps Dictionary order, and so SQLite's page layout, the same).
@Suite struct ModelFuzzTests {
    /// Steps per store kind: 20,000 in CI (so 40,000 in all), 200,000 with RECORDKEEPER_LONG=1.
    static let steps = Int(environmentInteger("RECORDKEEPER_FUZZ_STEPS") ?? (isLongMode ? 200_000 : 20_000))

    @Test(arguments: StoreKind.allCases)
    func `random operations agree with a dictionary model step by step and after reopening`(kind: StoreKind) async throws {
        let seed = environmentInteger("RECORDKEEPER_FUZZ_SEED") ?? (kind == .onDisk ? 0x5EED_0001 : 0x5EED_0002)
        try await withTemporaryDirectory { directory in
            let store = kind.makeStore(at: directory.appendingPathComponent("fuzz.sqlite"))
            var fuzzer = Fuzzer(store: store, seed: seed, canReopen: kind == .onDisk)
            let start = ContinuousClock.now
            do {
                try await fuzzer.run(steps: Self.steps)
            } catch let failure as FuzzFailure {
                let report = """
                    \(kind) store diverged from the model at step \(failure.step) of seed \(seed): \(failure.message)
                    operation: \(failure.operation)
                    replay: SWIFT_DETERMINISTIC_HASHING=1 RECORDKEEPER_FUZZ_SEED=\(seed) swift test --filter ModelFuzzTests
                    recent operations:
                    \(fuzzer.recent.joined(separator: "\n"))
                    """
                print(report)
                Issue.record(Comment(rawValue: report))
                return
            }
            reportFigure(
                "fuzz (\(kind), seed \(seed)): \(fuzzer.stats.steps) steps in \(ContinuousClock.now - start), "
                    + "\(fuzzer.stats.writes) writes, \(fuzzer.stats.refusals) refused inputs, "
                    + "\(fuzzer.stats.injectedFailures) injected commit failures, \(fuzzer.stats.storageFull) storage-full, "
                    + "\(fuzzer.stats.reopens) reopens, \(fuzzer.stats.fullComparisons) full comparisons, "
                    + "\(fuzzer.stats.largePayloads) multi-MB payloads, \(fuzzer.stats.hugeKeys) 100 KB keys, 0 divergences")
            #expect(fuzzer.stats.steps == Self.steps)
            #expect(fuzzer.stats.injectedFailures > 0 && fuzzer.stats.refusals > 0)
        }
    }
}

struct FuzzFailure: Error {
    let step: Int
    let operation: String
    let message: String
}

struct FuzzStats {
    var steps = 0
    var writes = 0
    var refusals = 0
    var injectedFailures = 0
    var storageFull = 0
    var reopens = 0
    var fullComparisons = 0
    var largePayloads = 0
    var hugeKeys = 0
}

/// One fuzzing run: the store, the model, and the generator that drives both.
struct Fuzzer {
    let store: RecordStore
    let canReopen: Bool
    var random: SplitMix64
    /// What the store must hold: collection → key → payload. Swift's `String` equality is
    /// canonical equivalence, the same rule the store applies to names.
    var model: [String: [String: Data]] = [:]
    /// Whether the store has opened (before that, removeCollection does nothing at all).
    var isOpen = false
    /// A commit failure is armed and the next write that reaches a transaction consumes it.
    var failureArmed = false
    var stats = FuzzStats()
    var recent: [String] = []
    var step = 0
    var operation = ""

    init(store: RecordStore, seed: UInt64, canReopen: Bool) {
        self.store = store
        self.canReopen = canReopen
        self.random = SplitMix64(seed: seed)
    }

    static let hugeKeys: [String] = (0..<3).map { "huge\($0)-" + String(repeating: "k", count: 100 * 1024) }
    static let collections = [
        "notes", "a:b", "a", "é", "e\u{301}", "日本語", "nul\u{0}name", "", "\u{212B}ngström", "Ångström",
        String(repeating: "C", count: 300),
    ]
    static let unicodeKeys = [
        "é", "e\u{301}", "\u{212B}", "\u{00C5}", "A\u{30A}", "\u{AC00}", "\u{1100}\u{1161}", "🙂", "👩‍👩‍👧",
        "\u{FB01}", "fi", "a\u{0}b", "\u{0}", "a\u{0}", "\u{2126}", "\u{03A9}", "q\u{301}\u{316}", "q\u{316}\u{301}",
        "\u{1E9B}\u{323}", "\u{017F}\u{323}\u{307}", " ", "\n", "'; DROP TABLE records; --", "%_", "\u{FEFF}",
    ]

    mutating func run(steps: Int) async throws {
        while step < steps {
            step += 1
            stats.steps = step
            if canReopen, step % 1_000 == 0 {
                operation = "close and reopen"
                note()
                await store.close()
                stats.reopens += 1
                try await compareAll()
                continue
            }
            if step % 250 == 0 {
                operation = "full comparison"
                try await compareAll()
                continue
            }
            try await randomStep()
        }
        operation = "final comparison"
        try await compareAll()
    }

    // MARK: Generators

    mutating func collectionName() -> String {
        Self.collections[random.below(Self.collections.count)]
    }

    mutating func key() -> String {
        switch random.below(100) {
        case 0..<45: return "k\(random.below(16))"
        case 45..<60: return Self.unicodeKeys[random.below(Self.unicodeKeys.count)]
        case 60..<64: return ""
        case 64..<66:
            stats.hugeKeys += 1
            return Self.hugeKeys[random.below(Self.hugeKeys.count)]
        default:
            // Short random strings of letters, combining marks (in any order), CJK and NUL.
            let length = 1 + random.below(6)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<length {
                let value: UInt32 =
                    switch random.below(10) {
                    case 0..<5: 0x61 + UInt32(random.below(4))
                    case 5..<8: 0x300 + UInt32(random.below(0x30))
                    case 8: 0x4E00 + UInt32(random.below(4))
                    default: UInt32(random.below(2))
                    }
                scalars.append(Unicode.Scalar(value)!)
            }
            return String(scalars)
        }
    }

    mutating func payload() -> Data {
        if random.chance(3_000) {
            stats.largePayloads += 1
            return random.bytes(1_000_000 + random.below(2_000_000))
        }
        switch random.below(100) {
        case 0..<10: return Data()
        case 10..<90: return random.bytes(random.below(200))
        default: return random.bytes(1_000 + random.below(20_000))
        }
    }

    // MARK: Steps

    mutating func randomStep() async throws {
        let roll = random.below(100)
        if roll < 4 {
            operation = "failNextCommitForTesting"
            note()
            try await store.failNextCommitForTesting()
            failureArmed = true
            stats.injectedFailures += 1
            return
        }
        if roll < 5 {
            try await squeeze()
            return
        }
        switch roll {
        case 5..<30: try await put()
        case 30..<50: try await apply()
        case 50..<58: try await replace()
        case 58..<63: try await removeCollection()
        case 63..<81: try await read()
        default: try await value()
        }
    }

    mutating func put() async throws {
        let (collection, key, data) = (collectionName(), key(), payload())
        operation = "put(\(describe(collection)), key: \(describe(key)), \(data.count) bytes)"
        try await write(collection: collection, keys: [key]) { try await $0.put(collection, key: key, data: data) } effect: { model in
            model[collection, default: [:]][key] = data
        }
    }

    mutating func apply() async throws {
        let collection = collectionName()
        var changes = RecordChanges()
        for _ in 0..<random.below(7) {
            let key = key()
            changes[key] = random.below(10) < 7 ? payload() : nil
        }
        let upserts = changes.upserts.map { "\(describe($0.key)): \($0.value.count)B" }.sorted().joined(separator: ", ")
        let removals = changes.removals.map(describe).sorted().joined(separator: ", ")
        operation = "apply(\(describe(collection)), upserts: [\(upserts)], removals: [\(removals)])"
        let keys = Array(changes.upserts.keys) + Array(changes.removals)
        // Removals alone, like removeCollection, create no store that does not exist yet.
        let removalsOnly = changes.upserts.isEmpty && !changes.removals.isEmpty
        try await write(collection: collection, keys: keys, opens: !removalsOnly) { [changes] in
            try await $0.apply(collection, changes: changes)
        } effect: { model in
            // Removals alone establish nothing, as a delete does (an empty change does).
            if removalsOnly, model[collection] == nil { return }
            var records = model[collection] ?? [:]
            for (key, data) in changes.upserts { records[key] = data }
            for key in changes.removals { records[key] = nil }
            model[collection] = records
        }
    }

    mutating func replace() async throws {
        let collection = collectionName()
        var values: [String: Data] = [:]
        for _ in 0..<random.below(6) { values[key()] = payload() }
        let onlyIfAbsent = random.chance(3)
        operation = "replace(\(describe(collection)), \(values.count) values, onlyIfAbsent: \(onlyIfAbsent))"
        let expected: [String: Data] = onlyIfAbsent ? (model[collection] ?? values) : values
        var returned: [String: Data]?
        try await write(collection: collection, keys: Array(values.keys)) { [values] store in
            returned = try await store.replace(collection, values: values, onlyIfAbsent: onlyIfAbsent)
        } effect: { model in
            if !onlyIfAbsent || model[collection] == nil { model[collection] = values }
        }
        if let returned, returned != expected {
            throw failure("replace returned \(summary(returned)), expected \(summary(expected))")
        }
    }

    mutating func removeCollection() async throws {
        let collection = collectionName()
        operation = "removeCollection(\(describe(collection)))"
        try await write(collection: collection, keys: [], opens: false) { try await $0.removeCollection(collection) } effect: { model in
            model[collection] = nil
        }
    }

    /// Runs one write and checks its outcome: refused input (nothing written), an injected
    /// commit failure (nothing written), or success (the model changes the same way).
    mutating func write(
        collection: String, keys: [String], opens: Bool = true,
        _ body: (RecordStore) async throws -> Void, effect: (inout [String: [String: Data]]) -> Void
    ) async throws {
        note()
        let invalid = collection.isEmpty ? RecordStoreError.Code.invalidCollectionName : keys.contains("") ? .invalidKey : nil
        // removeCollection on a store that never opened returns at once: no transaction.
        let reachesTransaction = invalid == nil && (opens || isOpen)
        do {
            try await body(store)
            if let invalid { throw failure("accepted a request that should fail with \(invalid)") }
            if reachesTransaction && failureArmed { throw failure("succeeded although a commit failure was armed") }
            effect(&model)
            stats.writes += 1
        } catch let error as RecordStoreError {
            if let invalid {
                guard error.code == invalid else { throw failure("threw \(error.code), expected \(invalid): \(error)") }
                stats.refusals += 1
            } else if failureArmed && reachesTransaction {
                guard error.code == .injectedFailure else { throw failure("threw \(error), expected injectedFailure") }
                failureArmed = false
            } else {
                throw failure("unexpected error: \(error)")
            }
        }
        if invalid == nil && opens { isOpen = true }
        if invalid == nil { try await compare(collection) }
    }

    /// Limits the database to its current size and attempts a large write: it may fit in free
    /// pages or fail with storageFull, and either way the store must match the model.
    mutating func squeeze() async throws {
        let collection = ["notes", "a", "日本語"][random.below(3)]
        let key = "squeeze\(random.below(4))"
        let info = try await store.info()
        // Usually more than the free pages can hold, so the write must grow the file and fail.
        let room = info.freePageCount * info.pageSize
        // The size depends on the page layout (which follows Dictionary order, seeded per
        // process), so the payload comes from its own generator: the operation sequence stays
        // the same for a seed whatever the layout.
        let (small, extra) = (random.chance(4), random.below(200_000))
        var payloadRandom = SplitMix64(seed: random.next())
        let data = payloadRandom.bytes(small ? 100_000 : min(room + 50_000 + extra, 3_000_000))
        operation = "squeeze: max_page_count = page_count, then put(\(collection), \(key), \(data.count) bytes)"
        note()
        let armed = failureArmed
        try await store.setMaxPageCountForTesting(info.pageCount)
        isOpen = true
        do {
            try await store.put(collection, key: key, data: data)
            if armed { throw failure("succeeded although a commit failure was armed") }
            model[collection, default: [:]][key] = data
        } catch let error as RecordStoreError {
            if error.code == .storageFull {
                stats.storageFull += 1
            } else if armed, error.code == .injectedFailure {
                failureArmed = false
            } else {
                throw failure("unexpected error: \(error)")
            }
        }
        try await store.setMaxPageCountForTesting(1_000_000_000)
        try await compare(collection)
    }

    mutating func read() async throws {
        let collection = collectionName()
        operation = "read(\(describe(collection)))"
        note()
        if collection.isEmpty {
            try await expectRefusal(.invalidCollectionName) { _ = try await $0.read(collection) }
            return
        }
        isOpen = true
        try await compare(collection)
    }

    mutating func value() async throws {
        let (collection, key) = (collectionName(), key())
        operation = "value(\(describe(collection)), key: \(describe(key)))"
        note()
        if collection.isEmpty || key.isEmpty {
            try await expectRefusal(collection.isEmpty ? .invalidCollectionName : .invalidKey) {
                _ = try await $0.value(collection, key: key)
            }
            return
        }
        isOpen = true
        let stored = try await store.value(collection, key: key)
        let expected = model[collection]?[key]
        if stored != expected {
            throw failure("value is \(stored.map { "\($0.count) bytes" } ?? "nil"), expected \(expected.map { "\($0.count) bytes" } ?? "nil")")
        }
    }

    mutating func expectRefusal(_ code: RecordStoreError.Code, _ body: (RecordStore) async throws -> Void) async throws {
        do {
            try await body(store)
            throw failure("accepted a request that should fail with \(code)")
        } catch let error as RecordStoreError {
            guard error.code == code else { throw failure("threw \(error.code), expected \(code)") }
            stats.refusals += 1
        }
    }

    // MARK: Comparison

    func compare(_ collection: String) async throws {
        let stored = try await store.read(collection)
        let expected = model[collection]
        guard stored == expected else {
            throw failure("collection \(describe(collection)) holds \(stored.map(summary) ?? "nil"), expected \(expected.map(summary) ?? "nil")")
        }
    }

    mutating func compareAll() async throws {
        stats.fullComparisons += 1
        let summaries = try await store.collections()
        isOpen = true
        let names = Set(summaries.map(\.name))
        guard names == Set(model.keys), names.count == summaries.count else {
            throw failure("collections are \(names.map(describe).sorted()), expected \(model.keys.map(describe).sorted())")
        }
        for summary in summaries {
            let records = model[summary.name] ?? [:]
            let bytes = records.values.reduce(0) { $0 + $1.count }
            guard summary.recordCount == records.count, summary.payloadBytes == bytes else {
                throw failure("collection \(describe(summary.name)) reports \(summary.recordCount) records / \(summary.payloadBytes) bytes, expected \(records.count) / \(bytes)")
            }
        }
        for collection in model.keys { try await compare(collection) }
    }

    // MARK: Reporting

    mutating func note() {
        recent.append("#\(step) \(operation)")
        if recent.count > 12 { recent.removeFirst() }
    }

    func failure(_ message: String) -> FuzzFailure {
        FuzzFailure(step: step, operation: operation, message: message)
    }

    func summary(_ records: [String: Data]) -> String {
        "{" + records.map { "\(describe($0.key)): \($0.value.count)B" }.sorted().joined(separator: ", ") + "}"
    }

    func describe(_ name: String) -> String {
        let scalars = name.unicodeScalars.prefix(24).map { scalar in
            scalar.isASCII && scalar.value >= 0x20 ? String(scalar) : "\\u{\(String(scalar.value, radix: 16))}"
        }.joined()
        return "\"\(scalars)\(name.unicodeScalars.count > 24 ? "…(\(name.utf8.count) bytes)" : "")\""
    }
}
