import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

@Suite struct RecordStoreReadWriteTests {
    @Test(arguments: StoreKind.allCases)
    func `a collection never established reads as nil`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let contents = try await store.read("notes")
            #expect(contents == nil)
            #expect(try await store.value("notes", key: "a") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `put, apply and replace establish a collection`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("a", key: "k", data: Data("1"))
            try await store.apply("b", changes: RecordChanges())
            try await store.replace("c", values: [:])
            #expect(try await store.read("a") == ["k": Data("1")])
            #expect(try await store.read("b") == [:])
            #expect(try await store.read("c") == [:])
            #expect(try await store.collections().map(\.name) == ["a", "b", "c"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an apply that only removes keys establishes nothing, like delete`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("other", key: "k", data: Data("1"))
            let applied = try await store.apply("notes", changes: RecordChanges(upserts: [:], removals: ["a", "b"]))
            #expect(applied.notFound.sorted() == ["a", "b"])
            #expect(applied.writtenCount == 0)
            #expect(try await store.read("notes") == nil)
            // Expecting the keys absent holds; expecting a version is a conflict, as for delete.
            try await store.apply("notes", changes: RecordChanges(upserts: [:], removals: ["a"]), expecting: ["a": nil])
            let conflict = await #expect(throws: RecordConflict.self) {
                try await store.apply(
                    "notes", changes: RecordChanges(upserts: [:], removals: ["a"]), expecting: ["a": RecordVersion(3)])
            }
            #expect(conflict?.action == .delete)
            #expect(conflict?.currentVersions == ["a": RecordVersion?.none])
            try await store.write { transaction in
                let inside = try transaction.apply("notes", changes: RecordChanges(upserts: [:], removals: ["a"]))
                #expect(inside.notFound == ["a"])
            }
            #expect(try await store.collections().map(\.name) == ["other"])
        }
    }

    @Test func `an apply that only removes keys creates no store file`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            let applied = try await store.apply("notes", changes: RecordChanges(upserts: [:], removals: ["a"]))
            #expect(applied.notFound == ["a"])
            #expect(!FileManager.default.fileExists(atPath: url.path))
            await store.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `removing the last record keeps the collection established`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("notes", key: "a", data: Data("1"))
            var changes = RecordChanges()
            changes["a"] = nil
            try await store.apply("notes", changes: changes)
            #expect(try await store.read("notes") == [:])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `removeCollection ends the collection and only that one`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("notes", key: "a", data: Data("1"))
            try await store.put("other", key: "a", data: Data("2"))
            try await store.removeCollection("notes")
            #expect(try await store.read("notes") == nil)
            #expect(try await store.read("other") == ["a": Data("2")])
            try await store.removeCollection("never-existed")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a narrow save never erases an unrelated record`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("progress", values: ["positions/a": Data("1"), "vocabulary/x": Data("2")])
            // Someone else writes a record this caller's snapshot never saw.
            try await store.put("progress", key: "positions/b", data: Data("3"))
            var changes = RecordChanges()
            changes["positions/a"] = Data("10")
            changes["vocabulary/x"] = nil
            try await store.apply("progress", changes: changes)
            #expect(try await store.read("progress") == ["positions/a": Data("10"), "positions/b": Data("3")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `apply skips payloads that are unchanged`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "same", data: Data("1"))
            try await store.put("c", key: "changed", data: Data("1"))
            let before = try #require(try await store.record("c", key: "same")).version
            try await store.apply("c", changes: RecordChanges(upserts: ["same": Data("1"), "changed": Data("2")]))
            #expect(try await store.record("c", key: "same")?.version == before)
            let changed = try #require(try await store.record("c", key: "changed")).version
            #expect(changed > before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `every write that changes a record gives it a newer version`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "k", data: Data("1"))
            let first = try #require(try await store.record("c", key: "k")).version
            var removal = RecordChanges()
            removal["k"] = nil
            try await store.apply("c", changes: removal)
            try await store.put("c", key: "k", data: Data("1"))
            let again = try #require(try await store.record("c", key: "k")).version
            #expect(again > first, "a record removed and written again must not reuse its old version")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `replace is a whole-collection replacement that returns the new contents`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("c", values: ["a": Data("1"), "b": Data("2")])
            let result = try await store.replace("c", values: ["b": Data("two"), "c": Data("3")])
            #expect(result == ["b": Data("two"), "c": Data("3")])
            #expect(try await store.read("c") == result)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `replace only if absent leaves an established collection alone`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "a", data: Data("1"))
            let result = try await store.replace("c", values: ["seed": Data("x")], onlyIfAbsent: true)
            #expect(result == ["a": Data("1")])
            #expect(try await store.read("c") == ["a": Data("1")])
            let seeded = try await store.replace("d", values: ["seed": Data("x")], onlyIfAbsent: true)
            #expect(seeded == ["seed": Data("x")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `collection and key stay apart in a record's identity`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("a:b", key: "c", data: Data("first"))
            try await store.put("a", key: "b:c", data: Data("second"))
            try await store.put("a/b", key: "c", data: Data("third"))
            #expect(try await store.value("a:b", key: "c") == Data("first"))
            #expect(try await store.value("a", key: "b:c") == Data("second"))
            #expect(try await store.read("a") == ["b:c": Data("second")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `an empty collection name or key is refused and nothing is written`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "kept", data: Data("1"))
            await #expect(throws: RecordStoreError.self) { try await store.put("", key: "k", data: Data()) }
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["good": Data("1"), "": Data("2")]))
            }
            #expect(error?.code == .invalidKey)
            #expect(error?.collection == "c")
            var removal = RecordChanges()
            removal["kept"] = nil
            removal[""] = nil
            await #expect(throws: RecordStoreError.self) { try await store.apply("c", changes: removal) }
            await #expect(throws: RecordStoreError.self) { try await store.replace("c", values: ["": Data()]) }
            #expect(try await store.read("c") == ["kept": Data("1")])
            #expect(try await store.collections().map(\.name) == ["c"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `keys may be any other Unicode string and payloads any bytes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let big = Data((0..<(5 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let values: [String: Data] = [
                "empty payload": Data(),
                "nul\u{0}inside": Data([0, 0, 1]),
                "emoji 🦊 and 日本語": Data("x"),
                String(repeating: "long", count: 10_000): Data("y"),
                "big": big,
                " ": Data([0xFF]),
            ]
            try await store.replace("any", values: values)
            #expect(try await store.read("any") == values)
            #expect(try await store.value("any", key: "nul\u{0}inside") == Data([0, 0, 1]))
            #expect(try await store.value("any", key: "nul") == nil)
            #expect(try await store.value("any", key: "empty payload") == Data())
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `canonically equal keys are one record`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "caf\u{E9}", data: Data("precomposed"))
            try await store.put("c", key: "cafe\u{301}", data: Data("decomposed"))
            let contents = try #require(try await store.read("c"))
            #expect(contents.count == 1)
            #expect(contents["café"] == Data("decomposed"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `concurrent applies on different keys both survive`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await store.apply("c", changes: RecordChanges(upserts: ["k\(index)": Data("\(index)")]))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.read("c")?.count == 20)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `records pages through a collection in key order`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let values = Dictionary(uniqueKeysWithValues: (0..<25).map { (String(format: "k%03d", $0), Data("\($0)")) })
            try await store.replace("c", values: values)
            var seen: [String] = []
            var after: String? = nil
            while let page = try await store.records("c", after: after, limit: 10), !page.isEmpty {
                seen += page.map(\.key)
                after = page.last?.key
            }
            #expect(seen == values.keys.sorted())
            #expect(try await store.records("missing") == nil)
            await #expect(throws: RecordStoreError.self) { try await store.records("c", limit: 0) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a write transaction spans collections and commits together`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let count = try await store.write { tx in
                try tx.put("orders", key: "1", data: Data("order"))
                try tx.put("outbox", key: "op-1", data: Data("send order 1"))
                return try tx.read("orders")?.count ?? -1
            }
            #expect(count == 1)
            #expect(try await store.value("outbox", key: "op-1") == Data("send order 1"))
            let keys = try await store.write { tx in
                var keys: [String] = []
                try tx.put("orders", key: "0", data: Data("first"))
                try tx.forEachRecord(in: "orders") { keys.append($0.key) }
                return keys
            }
            #expect(keys == ["0", "1"])
            struct Abort: Error {}
            await #expect(throws: Abort.self) {
                try await store.write { tx in
                    try tx.put("orders", key: "2", data: Data("order 2"))
                    throw Abort()
                }
            }
            #expect(try await store.read("orders") == ["0": Data("first"), "1": Data("order")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a snapshot streams records one at a time`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("c", values: ["b": Data("2"), "a": Data("1")])
            let keys = try await store.snapshot { snapshot in
                var keys: [String] = []
                try snapshot.forEachRecord(in: "c") { keys.append($0.key) }
                let missing = try snapshot.forEachRecord(in: "missing") { _ in keys.append("never") }
                return missing ? [] : keys
            }
            #expect(keys == ["a", "b"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `point reads and small writes never see another request's uncommitted work`(kind: StoreKind) async throws {
        let options = RecordStore.Options(durability: .normal)
        try await withStore(kind, options: options) { store, _ in
            try await store.put("c", key: "k", data: Data("committed"))
            struct Abort: Error {}
            let gate = BlockingGate()
            let writer = Task {
                try await store.write { tx in
                    try tx.put("c", key: "k", data: Data("uncommitted"))
                    gate.arriveAndWait()
                    throw Abort()
                }
            }
            await gate.arrival()
            // The write transaction is open: these must never run inside it.
            let reader = Task { try await store.value("c", key: "k") }
            let other = Task { try await store.put("c", key: "other", data: Data("mine")) }
            gate.open()
            await #expect(throws: Abort.self) { try await writer.value }
            let seen = try await reader.value
            try await other.value
            #expect(seen == Data("committed"))
            #expect(try await store.read("c") == ["k": Data("committed"), "other": Data("mine")])
        }
    }
}
