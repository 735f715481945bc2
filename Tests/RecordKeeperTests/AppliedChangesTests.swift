import TestHelpers
import Foundation
import Testing
import RecordKeeper
import RecordKeeperTestSupport

/// `RecordStore.apply(_:changes:)` reports what it did, not what it was asked.
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
