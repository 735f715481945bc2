import TestHelpers
import Foundation
import Testing
import RecordKeeper
import RecordKeeperTestSupport

/// `RecordStore.apply(_:changes:expecting:enqueue:)` (and a transaction's `apply`) reports what
/// it did, not what it was asked: with or without expectations, with or without messages.
@Suite struct AppliedChangesTests {
    @Test(arguments: StoreKind.allCases)
    func `removing three keys of which one existed reports one removed and two not found`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "b", data: Data("1"))
            try await store.put("c", key: "kept", data: Data("2"))
            var changes = RecordChanges()
            for key in ["a", "b", "c"] { changes[key] = nil }
            let applied = try await store.apply("c", changes: changes)
            #expect(applied.removed == ["b"])
            #expect(applied.notFound.sorted() == ["a", "c"])
            #expect(applied.added.isEmpty && applied.changed.isEmpty && applied.unchanged.isEmpty)
            #expect(applied.writtenCount == 1)
            #expect(try await store.read("c") == ["kept": Data("2")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `re-applying an identical upsert reports it unchanged and keeps its version`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let changes = RecordChanges(upserts: ["k": Data("v"), "n": Data("1")])
            let first = try await store.apply("c", changes: changes)
            #expect(first.added.sorted() == ["k", "n"])
            #expect(first.writtenCount == 2)
            let version = try await store.record("c", key: "k")?.version

            let again = try await store.apply("c", changes: changes)
            #expect(again.unchanged.sorted() == ["k", "n"])
            #expect(again.added.isEmpty && again.changed.isEmpty && again.removed.isEmpty && again.notFound.isEmpty)
            #expect(again.writtenCount == 0)
            #expect(try await store.record("c", key: "k")?.version == version)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an overwrite is changed and a new key is added even when their versions coincide`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            // "a" and "b" both reach version 3; removing "b" raises the floor to 3, so the next
            // insert gets version 4, the same version the overwrite of "a" gets.
            for round in 1...3 {
                try await store.put("c", key: "a", data: Data("a\(round)"))
                try await store.put("c", key: "b", data: Data("b\(round)"))
            }
            var removal = RecordChanges()
            removal["b"] = nil
            try await store.apply("c", changes: removal)

            let applied = try await store.apply("c", changes: RecordChanges(upserts: ["a": Data("a4"), "new": Data("n")]))
            #expect(applied.changed == ["a"])
            #expect(applied.added == ["new"])
            #expect(try await store.record("c", key: "a")?.version == RecordVersion(4))
            #expect(try await store.record("c", key: "new")?.version == RecordVersion(4))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `every upserted key's version after the write is reported, and no removed key's`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            for round in 1...3 {
                try await store.put("c", key: "a", data: Data("a\(round)"))
                try await store.put("c", key: "b", data: Data("b\(round)"))
            }
            try await store.put("c", key: "same", data: Data("s"))
            var removal = RecordChanges()
            removal["b"] = nil
            try await store.apply("c", changes: removal)

            var changes = RecordChanges(upserts: ["a": Data("a4"), "new": Data("n"), "same": Data("s")])
            changes["gone"] = nil
            let applied = try await store.apply("c", changes: changes)
            let stored = try #require(try await store.versionedRecords("c"))
            #expect(applied.versions == stored.mapValues(\.version))  // "b" and "gone" have none
            #expect(applied.versions["a"] == RecordVersion(4))
            #expect(applied.versions["new"] == RecordVersion(4))
            #expect(applied.unchanged == ["same"])
            #expect(applied.notFound == ["gone"])

            // In a collection established by the apply itself, too.
            let fresh = try await store.apply("fresh", changes: RecordChanges(upserts: ["x": Data("1")]))
            #expect(try await store.record("fresh", key: "x")?.version == fresh.versions["x"])
            #expect(fresh.versions.count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a single-record apply reports like a larger one, and gives the versions a put would`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            for round in 1...3 {
                try await store.put("c", key: "a", data: Data("a\(round)"))
                try await store.put("c", key: "b", data: Data("b\(round)"))
            }
            var removal = RecordChanges()
            removal["b"] = nil
            try await store.apply("c", changes: removal)  // the floor is 3 now

            let added = try await store.apply("c", changes: RecordChanges(upserts: ["new": Data("n")]))
            #expect(added.added == ["new"] && added.versions == ["new": RecordVersion(4)])
            let changed = try await store.apply("c", changes: RecordChanges(upserts: ["a": Data("a4")]))
            #expect(changed.changed == ["a"] && changed.versions == ["a": RecordVersion(4)])
            let unchanged = try await store.apply("c", changes: RecordChanges(upserts: ["a": Data("a4")]))
            #expect(unchanged.unchanged == ["a"] && unchanged.versions == ["a": RecordVersion(4)])
            #expect(unchanged.writtenCount == 0)
            let fresh = try await store.apply("other", changes: RecordChanges(upserts: ["x": Data("x")]))
            #expect(fresh.added == ["x"] && fresh.versions == ["x": RecordVersion(4)])

            // In a transaction whose removal already read and raised the floor.
            let (afterRemoval, back) = try await store.write { tx in
                var removal = RecordChanges()
                removal["new"] = nil
                try tx.apply("c", changes: removal)
                let afterRemoval = try tx.apply("c", changes: RecordChanges(upserts: ["later": Data("l")]))
                let back = try tx.apply("c", changes: RecordChanges(upserts: ["new": Data("n")]))
                return (afterRemoval, back)
            }
            #expect(afterRemoval.added == ["later"] && afterRemoval.versions == ["later": RecordVersion(5)])
            #expect(back.added == ["new"] && back.versions == ["new": RecordVersion(5)])
            let stored = try #require(try await store.versionedRecords("c")).mapValues(\.version)
            #expect(stored == ["a": RecordVersion(4), "later": RecordVersion(5), "new": RecordVersion(5)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conditional apply reports what became of every key, named in the expectations or not`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            for key in ["named-change", "named-same", "free-change", "free-same", "named-remove", "free-remove"] {
                try await store.put("c", key: key, data: Data(key.utf8))
            }
            let before = try #require(try await store.versionedRecords("c")).mapValues(\.version)
            var changes = RecordChanges(upserts: [
                "named-change": Data("2"), "named-same": Data("named-same".utf8), "named-new": Data("n"),
                "free-change": Data("2"), "free-same": Data("free-same".utf8), "free-new": Data("n"),
            ])
            for key in ["named-remove", "named-absent", "free-remove", "free-absent"] { changes[key] = nil }
            let applied = try await store.apply(
                "c", changes: changes,
                expecting: [
                    "named-change": before["named-change"], "named-same": before["named-same"], "named-new": nil,
                    "named-remove": before["named-remove"], "named-absent": nil,
                ])
            #expect(applied.added.sorted() == ["free-new", "named-new"])
            #expect(applied.changed.sorted() == ["free-change", "named-change"])
            #expect(applied.unchanged.sorted() == ["free-same", "named-same"])
            #expect(applied.removed.sorted() == ["free-remove", "named-remove"])
            #expect(applied.notFound.sorted() == ["free-absent", "named-absent"])
            let stored = try #require(try await store.versionedRecords("c"))
            #expect(applied.versions == stored.mapValues(\.version))
            #expect(applied.versions["named-same"] == before["named-same"])
            #expect(applied.versions["free-same"] == before["free-same"])

            // The same report with every expectation met but none named: like no expectations.
            let again = try await store.apply("c", changes: RecordChanges(upserts: ["free-new": Data("m")]), expecting: [:])
            #expect(again.changed == ["free-new"])
            #expect(try await store.record("c", key: "free-new")?.version == again.versions["free-new"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conditional apply with messages commits both, and a conflict stores neither`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let loaded = try #require(try await store.record("c", key: "k")).version
            let message = OutboxMessage(kind: "k.update", payload: Data("2"), orderingKey: "k")
            let applied = try await store.apply(
                "c", changes: RecordChanges(upserts: ["k": Data("2")]), expecting: ["k": loaded], enqueue: [message])
            #expect(applied.changed == ["k"])
            #expect(try await store.outbox.pending().map(\.id) == [message.id])

            let stale = OutboxMessage(kind: "k.update", payload: Data("3"), orderingKey: "k")
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply(
                    "c", changes: RecordChanges(upserts: ["k": Data("3")]), expecting: ["k": loaded], enqueue: [stale])
            }
            #expect(conflict?.keys == ["k"])
            #expect(try await store.value("c", key: "k") == Data("2"))
            #expect(try await store.outbox.pending().map(\.id) == [message.id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a transaction's apply reports like the store's`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let loaded = try #require(try await store.record("c", key: "k")).version
            let (plain, conditional) = try await store.write { tx in
                var removal = RecordChanges()
                removal["absent"] = nil
                let plain = try tx.apply("c", changes: removal)
                let conditional = try tx.apply(
                    "c", changes: RecordChanges(upserts: ["k": Data("2"), "new": Data("n")]), expecting: ["k": loaded])
                return (plain, conditional)
            }
            #expect(plain.notFound == ["absent"])
            #expect(conditional.changed == ["k"])
            #expect(conditional.added == ["new"])
            let stored = try #require(try await store.versionedRecords("c"))
            #expect(conditional.versions == stored.mapValues(\.version))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keys are reported as stored, normalized to NFC`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let decomposed = "e\u{301}"
            let applied = try await store.apply("c", changes: RecordChanges(upserts: [decomposed: Data("1")]))
            #expect(applied.added == ["\u{e9}"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a failed apply reports nothing and writes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            try await store.failNextCommitForTesting()
            var changes = RecordChanges()
            changes["a"] = nil
            changes["b"] = Data("2")
            await #expect(throws: RecordStoreError.self) { try await store.apply("c", changes: changes) }
            #expect(try await store.read("c") == ["a": Data("1")])
        }
    }
}
