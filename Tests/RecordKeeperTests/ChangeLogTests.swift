import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

/// The change log: written only while a stream observes, trimmed, cut by an oversized commit,
/// and the resync of a stream that fell behind it.
@Suite struct ChangeLogTests {
    @Test func `writes log nothing while no stream observes, and everything while one does`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let writer = RecordStore(url: url)
            try await writer.put("c", key: "unobserved", data: Data("0"))
            #expect(try changeLog(at: url).isEmpty)
            let observer = RecordStore(url: url)
            do {
                // Another store observes: the writer sees its lock and logs.
                let stream = await observer.changes(in: "c")
                try await writer.put("c", key: "observed", data: Data("1"))
                #expect(try changeLog(at: url).map(\.key) == ["observed"])
                #expect(try await changes(of: stream, until: { !$0.isEmpty }) == RecordChanges(upserts: ["observed": Data("1")]))
            }
            // The stream is gone; the watcher releases the lock on its queue: wait for that.
            observer.core.watcher.waitUntilIdleForTesting()
            try await writer.put("c", key: "later", data: Data("2"))
            #expect(try changeLog(at: url).map(\.key) == ["observed"], "no logging after the last stream ended")
        }
    }

    @Test func `the log keeps its newest entries and a trimming point is crossed rarely`() {
        #expect(ChangeLog.trimBound(first: 1, last: 10) == nil)
        let interval = ChangeLog.trimInterval
        let retained = ChangeLog.retainedEntries
        #expect(ChangeLog.trimBound(first: retained, last: retained + interval) == interval)
        #expect(ChangeLog.trimBound(first: 20 * interval + 1, last: 21 * interval - 1) == nil, "no multiple crossed")
        #expect(ChangeLog.trimBound(first: 1, last: interval) == nil, "nothing beyond the retained entries yet")
    }

    @Test func `a stream that fell behind the trimmed log gets every record again`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "gone", data: Data("0"))
            var iterator = await store.changes(in: "c").makeAsyncIterator()
            try await store.put("c", key: "a", data: Data("1"))
            try await store.put("c", key: "b", data: Data("2"))
            try await store.apply("c", changes: RecordChanges(upserts: [:], removals: ["gone"]))
            // Trim every entry but the newest, as the writers' trimming would after 100,000 more.
            try await store.write { transaction in
                let engine = transaction.context.engine
                try engine.trimChangeLog(through: try engine.changeLogBounds().last - 1)
            }
            // A complete resync: every record, as upserts.
            #expect(await iterator.next() == RecordChanges(upserts: ["a": Data("1"), "b": Data("2")]))
            try await store.put("c", key: "c", data: Data("3"))
            #expect(await iterator.next() == RecordChanges(upserts: ["c": Data("3")]))
        }
    }

    @Test func `a commit of more changes than the log keeps yields every record to a stream`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            let count = Int(ChangeLog.retainedEntries) + 1
            var values: [String: Data] = [:]
            values.reserveCapacity(count)
            for number in 0..<count { values["k\(number)"] = Data("\(number)") }
            let stream = await store.changes(in: "c")
            try await store.replace("c", values: values)
            // Only the newest row is kept: nothing more was logged than the log keeps.
            #expect(try changeLog(at: url).count == 1)
            let merged = try await changes(of: stream, until: { $0.count >= count })
            #expect(merged == RecordChanges(upserts: values))
        }
    }
}
