import TestHelpers
import HarnessSupport
import Foundation
import RecordKeeper
import Testing

/// Kills the `recordkeeper-crashtest` helper with SIGKILL at random moments while it commits
/// batches, then reopens the store and checks that it is healthy, that every batch the helper
/// confirmed is there in full and that no batch is there in part.
@Suite struct CrashTests {
    /// Kills per run: 50 in CI, 500 with RECORDKEEPER_LONG=1 (or RECORDKEEPER_KILLS=n).
    static let kills = Int(environmentInteger("RECORDKEEPER_KILLS") ?? (isLongMode ? 500 : 50))
    /// Kills sharing one store before the next starts afresh (keeps verification cheap).
    static let killsPerStore = 10

    @Test func `killed writers lose no confirmed batch and leave no partial batch`() async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        let baseSeed = environmentInteger("RECORDKEEPER_CRASH_SEED") ?? 20_261_129
        var timing = SplitMix64(seed: baseSeed)
        var totals = CrashTotals()
        try await withTemporaryDirectory { directory in
            var confirmed: Set<String> = []
            var storeURL = directory.appendingPathComponent("crash-0.sqlite")
            for kill in 0..<Self.kills {
                if kill % Self.killsPerStore == 0 {
                    storeURL = directory.appendingPathComponent("crash-\(kill / Self.killsPerStore).sqlite")
                    confirmed = []
                }
                let runSeed = baseSeed &* 1_000 &+ UInt64(kill)
                let durability = kill % 2 == 0 ? "full" : "normal"
                // One kill in eight lands right after launch, while the store opens; the others
                // at a random moment after the first confirmed batch, however slow the machine.
                let early = timing.chance(8)
                let delay = early ? timing.below(40) : timing.below(300)
                let child = try ChildProcess(
                    executable: helper,
                    arguments: ["batches", "--store", storeURL.path, "--seed", "\(runSeed)", "--durability", durability],
                    in: directory)
                try child.start()
                if !early { try await child.waitForOutput() }
                try await Task.sleep(for: .milliseconds(delay))
                child.kill()
                await child.waitForExit()
                let context = "kill \(kill) (run seed \(runSeed), \(durability), \(early ? "" : "first batch + ")\(delay) ms; replay with RECORDKEEPER_CRASH_SEED=\(baseSeed))"
                guard child.process.terminationReason == .uncaughtSignal else {
                    Issue.record("the helper exited by itself with status \(child.process.terminationStatus): \(try child.errorOutput()) — \(context)")
                    return
                }
                let lines = try child.output().split(separator: "\n").map(String.init)
                try child.removeFiles()
                confirmed.formUnion(lines)
                totals.confirmedBatches += lines.count

                let store = RecordStore(url: storeURL)
                let health = try await store.integrityCheck()
                #expect(health == ["ok"], "\(context)")
                let found = try await CrashVerifier.verify(store)
                await store.close()
                for problem in found.problems { Issue.record("\(problem) — \(context)") }
                let missing = confirmed.subtracting(found.completeBatches)
                #expect(missing.isEmpty, "confirmed batches missing: \(missing.sorted().prefix(10)) — \(context)")
                let unconfirmed = found.completeBatches.filter { $0.hasPrefix("\(runSeed)-") && !lines.contains($0) }
                #expect(unconfirmed.count <= 1, "more than the one in-flight batch committed unconfirmed: \(unconfirmed) — \(context)")
                if !found.problems.isEmpty || !missing.isEmpty || health != ["ok"] { return }
                totals.kills += 1
                if !lines.isEmpty { totals.killsAfterCommits += 1 }
                totals.recordsChecked += found.recordCount
            }
        }
        reportFigure(
            "crash: \(totals.kills) kills survived (\(totals.killsAfterCommits) after at least one commit), "
                + "\(totals.confirmedBatches) confirmed batches, \(totals.recordsChecked) record checks, 0 lost, 0 partial")
        #expect(totals.kills == Self.kills)
        #expect(totals.killsAfterCommits >= Self.kills / 2, "most kills must land after some commits, or the test proves little")
        #expect(totals.confirmedBatches >= Self.kills)
    }

    @Test func `the verifier notices a missing part, a torn payload and a leftover tail`() async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("verify.sqlite")
            let child = try ChildProcess(
                executable: helper, arguments: ["batches", "--store", url.path, "--seed", "5", "--count", "12"], in: directory)
            try child.start()
            await child.waitForExit()
            let errors = try child.errorOutput()
            #expect(child.process.terminationStatus == 0, "\(errors)")
            let confirmed = Set(try child.output().split(separator: "\n").map(String.init))
            #expect(confirmed.count == 12)

            let store = RecordStore(url: url)
            let clean = try await CrashVerifier.verify(store)
            #expect(clean.problems.isEmpty)
            #expect(clean.completeBatches == confirmed)

            // Remove one part of one batch: that batch is reported partial.
            let records = try #require(try await store.read("c0"))
            let victim = try #require(records.keys.sorted().first)
            try await store.apply("c0", changes: RecordChanges(upserts: [:], removals: [victim]))
            let partial = try await CrashVerifier.verify(store)
            #expect(partial.problems.contains { $0.contains("partial") })

            // Tear a payload: the checksum catches it.
            let other = try #require(records.keys.sorted().last)
            var torn = try #require(records[other])
            torn[torn.count - 1] ^= 0xFF
            try await store.put("c0", key: other, data: torn)
            #expect(try await CrashVerifier.verify(store).problems.contains { $0.contains("torn") })

            // A second tail for the run: a lost removal is reported.
            let tails = try #require(try await store.read("tail"))
            let tail = try #require(tails.first)
            let fakeBatch = tail.key.replacingOccurrences(of: "/tail", with: "").replacingOccurrences(of: "-", with: "-9")
            let header = String(decoding: tail.value.prefix(while: { $0 != 0x0A }), as: UTF8.self)
                .replacingOccurrences(of: "batch=\(tail.key.dropLast(5))", with: "batch=\(fakeBatch)")
            try await store.put("tail", key: "\(fakeBatch)/tail", data: Data(header.utf8) + tail.value.drop(while: { $0 != 0x0A }))
            #expect(try await CrashVerifier.verify(store).problems.isEmpty == false)
        }
    }
}

private struct CrashTotals {
    var kills = 0
    var killsAfterCommits = 0
    var confirmedBatches = 0
    var recordsChecked = 0
}

/// Reads every record the helper writes and checks each batch is whole (see `BatchPlan` in
/// Sources/recordkeeper-crashtest).
enum CrashVerifier {
    struct Outcome {
        var completeBatches: Set<String> = []
        var problems: [String] = []
        var recordCount = 0
    }

    private struct Part {
        let batch: String
        let kind: String
        let part: Int
        let of: Int
        let collection: String
        let key: String
    }

    static let collections = ["c0", "c1", "c2", "c3", "tail"]

    static func verify(_ store: RecordStore) async throws -> Outcome {
        var result = Outcome()
        var parts: [String: [Part]] = [:]
        for collection in collections {
            guard let records = try await store.read(collection) else { continue }
            for (key, payload) in records {
                result.recordCount += 1
                switch parse(payload, collection: collection, key: key) {
                case .success(let part): parts[part.batch, default: []].append(part)
                case .failure(let problem): result.problems.append(problem.message)
                }
            }
        }
        // The latest write batch of each run is the only one that keeps its tail record.
        var latestWrite: [String: Int] = [:]
        for (batch, batchParts) in parts where batchParts.first?.kind == "write" {
            let (run, number) = split(batch)
            latestWrite[run] = max(latestWrite[run] ?? -1, number)
        }
        var tailsPerRun: [String: Int] = [:]
        for (batch, batchParts) in parts {
            let of = batchParts[0].of
            let kind = batchParts[0].kind
            let (run, number) = split(batch)
            var expected = Set(0..<of)
            if kind == "write" {
                if number != latestWrite[run] { expected.remove(of - 1) }
                if batchParts.contains(where: { $0.collection == "tail" }) { tailsPerRun[run, default: 0] += 1 }
            }
            let present = batchParts.map(\.part)
            if Set(present) != expected || present.count != expected.count
                || batchParts.contains(where: { $0.of != of || $0.kind != kind })
            {
                result.problems.append(
                    "batch \(batch) (\(kind)) is partial: parts \(present.sorted()) of \(of), expected \(expected.sorted())")
            } else {
                result.completeBatches.insert(batch)
            }
        }
        for (run, count) in tailsPerRun where count > 1 {
            result.problems.append("run \(run) kept \(count) tail records: a tail removal was lost")
        }
        return result
    }

    private static func split(_ batch: String) -> (String, Int) {
        let pieces = batch.split(separator: "-")
        return (String(pieces.first ?? ""), Int(pieces.last ?? "") ?? -1)
    }

    struct Problem: Error { let message: String }

    private static func parse(_ payload: Data, collection: String, key: String) -> Swift.Result<Part, Problem> {
        guard let newline = payload.firstIndex(of: 0x0A) else {
            return .failure(Problem(message: "record \(collection)/\(key) has no header"))
        }
        let header = String(decoding: payload[payload.startIndex..<newline], as: UTF8.self)
        var fields: [String: String] = [:]
        for field in header.split(separator: " ").dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard header.hasPrefix("rkcrash "), let batch = fields["batch"], let kind = fields["kind"],
            let part = fields["part"].flatMap(Int.init), let of = fields["of"].flatMap(Int.init),
            let bytes = fields["bytes"].flatMap(Int.init), let checksum = fields["fnv"].flatMap({ UInt64($0, radix: 16) })
        else { return .failure(Problem(message: "record \(collection)/\(key) has a malformed header: \(header)")) }
        let filler = payload[(newline + 1)...]
        guard filler.count == bytes, fnv1a(filler) == checksum else {
            return .failure(Problem(message: "record \(collection)/\(key) of batch \(batch) is torn: \(filler.count) bytes, expected \(bytes)"))
        }
        let expectedKey = collection == "tail" ? "\(batch)/tail" : "\(batch)/\(part)"
        guard key == expectedKey else {
            return .failure(Problem(message: "record \(collection)/\(key) holds part \(part) of batch \(batch)"))
        }
        return .success(Part(batch: batch, kind: kind, part: part, of: of, collection: collection, key: key))
    }

    static func fnv1a(_ bytes: Data) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        bytes.withUnsafeBytes { buffer in
            for byte in buffer {
                hash ^= UInt64(byte)
                hash &*= 0x100_0000_01B3
            }
        }
        return hash
    }
}
