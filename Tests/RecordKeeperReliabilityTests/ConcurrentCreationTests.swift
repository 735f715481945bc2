import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// Several connections creating the same new store at the same moment: every one of them
/// must see either no store yet or a complete RecordKeeper store, never a half-written header.
@Suite struct ConcurrentCreationTests {
    static let rounds = isLongMode ? 2_000 : 150

    @Test func `stores created at the same moment by several connections all open`() async throws {
        try await withTemporaryDirectory { directory in
            var failures: [String] = []
            for round in 0..<Self.rounds {
                let url = directory.appendingPathComponent("race-\(round).sqlite")
                let stores = (0..<4).map { _ in RecordStore(url: url) }
                let outcomes = await withTaskGroup(of: String?.self) { group in
                    for (index, store) in stores.enumerated() {
                        group.addTask {
                            do {
                                try await store.put("c", key: "k\(index)", data: Data("\(index)".utf8))
                                return nil
                            } catch {
                                return "round \(round), store \(index): \(error)"
                            }
                        }
                    }
                    var outcomes: [String] = []
                    for await outcome in group { if let outcome { outcomes.append(outcome) } }
                    return outcomes
                }
                failures += outcomes
                for store in stores { await store.close() }
            }
            #expect(failures.isEmpty, "\(failures.count) of \(Self.rounds * 4) openings failed: \(failures.prefix(3))")
            reportFigure("concurrent creation: \(Self.rounds) rounds × 4 connections, \(failures.count) failures")
        }
    }
}
