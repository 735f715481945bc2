import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

@Suite struct ConflictAndChangeStreamTests {
    @Test(arguments: StoreKind.allCases)
    func `a write based on a stale version conflicts and writes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let loaded = try #require(try await store.record("c", key: "k")).version
            try await store.put("c", key: "k", data: Data("someone else"))
            var changes = RecordChanges()
            changes["k"] = Data("mine")
            changes["other"] = Data("also mine")
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: changes, expecting: ["k": loaded])
            }
            #expect(conflict?.keys == ["k"])
            #expect(conflict?.collection == "c")
            #expect(try await store.read("c") == ["k": Data("someone else")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conditional write names every conflicting key and an unchanged record keeps its version`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("c", values: ["a": Data("1"), "b": Data("1"), "c": Data("1")])
            let loaded = try #require(try await store.versionedRecords("c")).mapValues(\.version)
            try await store.put("c", key: "b", data: Data("someone else"))
            try await store.put("c", key: "d", data: Data("someone else"))
            let stored = try #require(try await store.versionedRecords("c"))
            let mine = RecordChanges(upserts: [
                "a": Data("1"), "b": Data("mine"), "c": Data("mine"), "d": Data("mine"), "e": Data("mine"),
            ])
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply(
                    "c", changes: mine,
                    expecting: ["a": loaded["a"], "b": loaded["b"], "c": loaded["c"], "d": nil, "e": nil])
            }
            #expect(Set(conflict?.keys ?? []) == ["b", "d"])
            #expect(conflict?.currentVersions["b"] == .some(stored["b"]?.version))
            #expect(conflict?.currentVersions["d"] == .some(stored["d"]?.version))
            #expect(try await store.read("c") == stored.mapValues(\.data))

            let versions = try await store.apply(
                "c", changes: mine,
                expecting: ["a": loaded["a"], "b": stored["b"]?.version, "c": loaded["c"], "d": stored["d"]?.version, "e": nil]
            ).versions
            #expect(versions["a"] == loaded["a"])  // written unchanged: not rewritten
            let after = try #require(try await store.versionedRecords("c"))
            #expect(after.mapValues(\.version) == versions)
            #expect(after.mapValues(\.data) == mine.upserts)
            #expect(try #require(versions["b"]) > stored["b"]!.version)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a write based on current versions succeeds and returns the new versions`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let loaded = try #require(try await store.record("c", key: "k")).version
            let versions = try await store.apply(
                "c", changes: RecordChanges(upserts: ["k": Data("2"), "new": Data("n")]),
                expecting: ["k": loaded, "new": nil]
            ).versions
            let stored = try #require(try await store.versionedRecords("c"))
            #expect(versions["k"] == stored["k"]?.version)
            #expect(versions["new"] == stored["new"]?.version)
            #expect(try #require(versions["k"]) > loaded)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a record removed and written again never gets an old version back`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            for round in 2...5 { try await store.put("c", key: "k", data: Data("\(round)")) }
            let loaded = try #require(try await store.record("c", key: "k")).version
            // Removed and written again in one transaction, then in separate ones.
            try await store.write { tx in
                var removal = RecordChanges()
                removal["k"] = nil
                try tx.apply("c", changes: removal)
                try tx.put("c", key: "k", data: Data("1"))
            }
            let sameTransaction = try #require(try await store.record("c", key: "k")).version
            #expect(sameTransaction > loaded)
            try await store.removeCollection("c")
            try await store.put("c", key: "k", data: Data("1"))
            let afterRemoval = try #require(try await store.record("c", key: "k")).version
            #expect(afterRemoval > sameTransaction)
            await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["k": Data("x")]), expecting: ["k": loaded])
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `expecting absence conflicts with a record that exists`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["k": Data("2")]), expecting: ["k": nil])
            }
            #expect(conflict?.currentVersions["k"] != nil)
            #expect(try await store.value("c", key: "k") == Data("1"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a change stream that keeps up yields what each commit changed, in order`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let stream = await store.changes(in: "c")
            var iterator = stream.makeAsyncIterator()
            try await store.put("c", key: "a", data: Data("1"))
            #expect(await iterator.next() == RecordChanges(upserts: ["a": Data("1")]))
            try await store.put("other", key: "a", data: Data("ignored"))
            try await store.apply("c", changes: RecordChanges(upserts: ["a": Data("1"), "b": Data("2")]))
            // The unchanged payload of "a" is left out, and so is the other collection.
            #expect(await iterator.next() == RecordChanges(upserts: ["b": Data("2")]))
            try await store.replace("c", values: ["b": Data("2"), "c": Data("3")])
            #expect(await iterator.next() == RecordChanges(upserts: ["c": Data("3")], removals: ["a"]))
            try await store.removeCollection("c")
            #expect(await iterator.next() == RecordChanges(upserts: [:], removals: ["b", "c"]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a consumer that falls behind gets the commits merged, the latest change of each key winning`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "gone", data: Data("0"))
            var iterator = await store.changes(in: "c").makeAsyncIterator()
            try await store.put("c", key: "a", data: Data("1"))
            try await store.put("c", key: "a", data: Data("2"))
            try await store.put("c", key: "b", data: Data("1"))
            try await store.apply("c", changes: RecordChanges(upserts: [:], removals: ["b", "gone"]))
            try await store.put("c", key: "new", data: Data("x"))
            try await store.apply("c", changes: RecordChanges(upserts: [:], removals: ["new"]))
            // One element: "a" with its latest payload; removals as removals, including "b" and
            // "new", which were written and removed while the consumer was away.
            #expect(await iterator.next() == RecordChanges(upserts: ["a": Data("2")], removals: ["b", "gone", "new"]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a change stream is silent on failed and empty writes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let stream = await store.changes(in: "c")
            var iterator = stream.makeAsyncIterator()
            try await store.put("c", key: "a", data: Data("1"))
            #expect(await iterator.next() == RecordChanges(upserts: ["a": Data("1")]))
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "b", data: Data("2")) }
            await #expect(throws: RecordConflict.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["c": Data("3")]), expecting: ["a": nil])
            }
            try await store.put("c", key: "a", data: Data("1"))  // unchanged: nothing to report
            try await store.put("c", key: "d", data: Data("4"))
            #expect(await iterator.next() == RecordChanges(upserts: ["d": Data("4")]))
        }
    }
}
