import TestHelpers
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
            observer.watcher.waitUntilIdleForTesting()
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
                try engine.changeLog.trim(through: try engine.changeLog.bounds().last - 1)
            }
            // A complete resync: every record, as a full state, which conveys that `gone` is gone.
            let resync = try #require(await iterator.next())
            #expect(resync == RecordChanges(fullState: ["a": Data("1"), "b": Data("2")]))
            #expect(resync.isFullState)
            let copy = ["gone": Data("0"), "a": Data("1")]
            #expect(resync.applying(to: copy) == ["a": Data("1"), "b": Data("2")], "the removal of gone reaches a copy")
            var merged = RecordChanges(upserts: ["gone": Data("0")])
            merged.merge(resync)
            #expect(merged == resync, "a full state replaces what it is merged into")
            try await store.put("c", key: "c", data: Data("3"))
            #expect(await iterator.next() == RecordChanges(upserts: ["c": Data("3")]))
        }
    }

    @Test func `a commit of more changes than the log keeps yields every record to a stream`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            try await store.put("other", key: "a", data: Data("0"))  // the store exists
            let count = Int(ChangeLog.retainedEntries) + 1
            var values: [String: Data] = [:]
            values.reserveCapacity(count)
            for number in 0..<count { values["k\(number)"] = Data("\(number)") }
            let stream = await store.changes(in: "c")
            try await store.replace("c", values: values)
            // Only the newest row is kept: nothing more was logged than the log keeps.
            #expect(try changeLog(at: url).count == 1)
            let merged = try await changes(of: stream, until: { $0.count >= count })
            #expect(merged == RecordChanges(fullState: values))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a stream that fell behind conveys an emptied collection as an empty full state`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "gone", data: Data("0"))
            var iterator = await store.changes(in: "c").makeAsyncIterator()
            try await store.put("c", key: "briefly", data: Data("1"))
            try await store.apply("c", changes: RecordChanges(upserts: [:], removals: ["gone", "briefly"]))
            try await store.write { transaction in
                let engine = transaction.context.engine
                try engine.changeLog.trim(through: try engine.changeLog.bounds().last - 1)
            }
            let resync = try #require(await iterator.next())
            #expect(resync == RecordChanges(fullState: [:]))
            #expect(!resync.isEmpty, "an empty full state is not an empty change")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a typed stream that fell behind says its element is the full state`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "gone", title: "G"), Book(id: "a", title: "A")])
            var changes = await books.changes().makeAsyncIterator()
            try await books.save(Book(id: "b", title: "B"))
            try await books.delete("gone")
            try await store.write { transaction in
                let engine = transaction.context.engine
                try engine.changeLog.trim(through: try engine.changeLog.bounds().last - 1)
            }
            #expect(try await changes.next() == RepositoryChange(upserted: [Book(id: "a", title: "A"), Book(id: "b", title: "B")], isFullState: true))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a full state is refused by writes, which name replace`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "kept", data: Data("0"))
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.apply("c", changes: RecordChanges(fullState: ["a": Data("1")]))
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.detail?.contains("replace") == true)
            #expect(try await store.read("c") == ["kept": Data("0")], "nothing of it was written")
        }
    }
}
