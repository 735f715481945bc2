import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

@Suite struct RecordStoreFailureTests {
    @Test(arguments: StoreKind.allCases)
    func `a failed commit writes nothing and a retry succeeds`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "existing", data: Data("1"))
            try await store.failNextCommitForTesting()
            var changes = RecordChanges()
            changes["new"] = Data("2")
            changes["existing"] = nil
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.apply("c", changes: changes)
            }
            #expect(error?.code == .injectedFailure)
            #expect(error?.collection == "c")
            #expect(try await store.read("c") == ["existing": Data("1")])
            try await store.apply("c", changes: changes)
            #expect(try await store.read("c") == ["new": Data("2")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a failed replace or collection removal leaves the collection as it was`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.replace("c", values: ["a": Data("1")])
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) { try await store.replace("c", values: ["b": Data("2")]) }
            try await store.failNextCommitForTesting()
            await #expect(throws: RecordStoreError.self) { try await store.removeCollection("c") }
            #expect(try await store.read("c") == ["a": Data("1")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a full store names the failing key and keeps what was committed`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "confirmed", data: Data("1"))
            let pages = try await store.info().pageCount
            try await store.setMaxPageCountForTesting(pages + 2)
            let big = Data(repeating: 7, count: 64 * 1024)
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.apply("c", changes: RecordChanges(upserts: ["too-big": big]))
            }
            #expect(error?.code == .storageFull)
            #expect(error?.sqliteCode == SQLITE_FULL)
            #expect(error?.operation == .apply)
            #expect(error?.collection == "c")
            #expect(error?.key == "too-big")
            #expect(error?.errorDescription?.contains("disk is full") == true)
            #expect(try await store.read("c") == ["confirmed": Data("1")])
            try await store.setMaxPageCountForTesting(1_000_000)
            try await store.put("c", key: "too-big", data: big)
            #expect(try await store.value("c", key: "too-big") == big)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a transaction that goes on after SQLite rolled it back writes nothing more and throws`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("c", key: "confirmed", data: Data("1"))
            try await store.setMaxPageCountForTesting(try await store.info().pageCount + 2)
            let big = Data(repeating: 7, count: 256 * 1024)
            let after = Counter()
            let error = await #expect(throws: RecordStoreError.self) {
                try await store.write { transaction in
                    try transaction.put("c", key: "first", data: Data("first"))
                    // SQLITE_FULL: SQLite rolls the whole transaction back. A body may catch a
                    // failed write and go on; what it writes then must not run on its own.
                    #expect(throws: RecordStoreError.self) { try transaction.put("c", key: "big", data: big) }
                    do {
                        try transaction.put("c", key: "after", data: Data("after"))
                    } catch {
                        _ = after.increment()
                        throw error
                    }
                }
            }
            #expect(after.count == 1, "the write after the rollback must be refused")
            #expect(error?.sqliteCode == SQLITE_ABORT | (2 << 8))
            #expect(error?.errorDescription?.contains("rolled the transaction back") == true)
            try await store.setMaxPageCountForTesting(1_000_000)
            #expect(try await store.read("c") == ["confirmed": Data("1")])
            // The connection is usable again.
            try await store.put("c", key: "later", data: Data("later"))
            #expect(try await store.read("c") == ["confirmed": Data("1"), "later": Data("later")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a cancelled write stops, rolls back and throws CancellationError`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let hundredWritten = BlockingGate()
            let task = Task {
                try await store.write { tx in
                    var index = 0
                    while true {
                        try tx.put("c", key: "k\(index)", data: Data("v"))
                        index += 1
                        if index == 100 { hundredWritten.arrive() }
                    }
                }
            }
            await hundredWritten.arrival()
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(try await store.read("c") == nil)
            try await store.put("c", key: "after", data: Data("ok"))
            #expect(try await store.read("c") == ["after": Data("ok")])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a long statement of a cancelled task is interrupted`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let values = Dictionary(uniqueKeysWithValues: (0..<20_000).map { ("k\($0)", Data("v\($0)")) })
            try await store.replace("c", values: values)
            let running = BlockingGate()
            let task = Task {
                try await store.write { tx in
                    running.arrive()
                    while !Task.isCancelled {}
                    // Cancellation arrived while the body ran. Go straight to SQLite (past the
                    // request-level checks): its progress handler stops the long statement.
                    return try tx.context.engine.records.readAll("c")?.count ?? 0
                }
            }
            await running.arrival()
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(try await store.read("c")?.count == 20_000)
        }
    }

    @Test func `a transaction used after its body returned throws misuse`() async throws {
        let store = RecordStore.inMemory()
        let escaped = EscapedTransaction()
        try await store.write { tx in escaped.transaction = tx }
        let transaction = try #require(escaped.transaction)
        #expect(throws: RecordStoreError.self) { try transaction.put("c", key: "k", data: Data()) }
    }

    @Test func `errors carry context and an actionable description`() async throws {
        let error = RecordStoreError(
            code: .storageFull, operation: .apply, collection: "notes", key: "a\u{0}b", path: "/tmp/x.sqlite",
            sqliteCode: SQLITE_FULL, sqliteMessage: "database or disk is full")
        let description = try #require(error.errorDescription)
        #expect(description.contains("notes"))
        #expect(description.contains("a\\u{0}b"))
        #expect(description.contains("/tmp/x.sqlite"))
        #expect(error.recoverySuggestion?.contains("Free some disk space") == true)
        #expect(error.description.contains("SQLite code 13"))
    }

    @Test func `descriptions read as sentences with and without a collection`() {
        let busy = RecordStoreError(code: .busy, operation: .write, path: "/tmp/s.sqlite")
        #expect(busy.errorDescription == "Could not save in store /tmp/s.sqlite: another connection kept the store locked past the busy timeout.")
        let full = RecordStoreError(code: .storageFull, operation: .apply, collection: "notes", key: "k")
        #expect(full.errorDescription == "Could not save to collection \"notes\" (key \"k\"): the disk is full.")
        let opening = RecordStoreError(code: .notADatabase, operation: .open, path: "/tmp/x")
        #expect(opening.errorDescription == "Could not open the store at /tmp/x: the file is not an SQLite database.")
    }
}

/// Carries a transaction out of its body, which the API forbids, to prove the misuse is caught.
///
/// `@unchecked Sendable`: the one write happens inside `write`'s body and the one read after
/// `write` returned, so the two never overlap; the test escapes a non-`Sendable` object on
/// purpose, and nothing else ever touches it.
final class EscapedTransaction: @unchecked Sendable {
    var transaction: RecordTransaction?
}
