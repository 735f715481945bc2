import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport

// The cart example of docs/OUTBOX.md, verbatim between the markers.
// BEGIN EXAMPLE
/// A cart: items by SKU and a version that grows with every edit.
struct Cart: Equatable, Sendable {
    var owner: String
    var items: [String: Int]  // SKU → quantity
    var version: Int
}

/// The app's view of carts; the persistent and the in-memory store both conform.
protocol CartStore: Sendable {
    func cart(of owner: String) async throws -> Cart
    /// Sets the quantity of `sku` (0 removes it) and queues the matching server operation,
    /// in one transaction.
    func setQuantity(_ quantity: Int, of sku: String, for owner: String) async throws
}

/// A cart record that does not hold the number this code writes: reported, never read as 0.
struct UnreadableCartRecord: Error, CustomStringConvertible {
    let key: String
    let data: Data
    var description: String { "the cart record \(key) holds \(data.count) bytes that are not a number" }
}

/// Carts in a RecordKeeper store: one record per item (`<owner>/items/<sku>`) and one for the
/// version (`<owner>/version`), so an edit writes only what it changes.
struct RecordCartStore: CartStore {
    let store: RecordStore

    /// Carts kept in a file: they and their queued operations survive restarts.
    static func persistent(at url: URL) -> RecordCartStore { RecordCartStore(store: RecordStore(url: url)) }
    /// Carts in memory (tests, previews): the same engine and code paths.
    static func inMemory() -> RecordCartStore { RecordCartStore(store: .inMemory()) }

    /// The number a cart record holds; throws instead of guessing when it holds anything else.
    static func number(_ data: Data, key: String) throws -> Int {
        guard let number = Int(String(decoding: data, as: UTF8.self)) else {
            throw UnreadableCartRecord(key: key, data: data)
        }
        return number
    }

    func cart(of owner: String) async throws -> Cart {
        let prefix = "\(owner)/items/"
        // The version and the items from one snapshot.
        return try await store.snapshot { snapshot in
            var cart = Cart(owner: owner, items: [:], version: 0)  // no records yet: a new cart
            try snapshot.forEachRecord(in: "carts") { record in
                if record.key == "\(owner)/version" {
                    cart.version = try Self.number(record.data, key: record.key)
                } else if record.key.hasPrefix(prefix) {
                    cart.items[String(record.key.dropFirst(prefix.count))] = try Self.number(record.data, key: record.key)
                }
            }
            return cart
        }
    }

    func setQuantity(_ quantity: Int, of sku: String, for owner: String) async throws {
        try await store.write { tx in
            let versionKey = "\(owner)/version"
            let version = try tx.value("carts", key: versionKey).map { try Self.number($0, key: versionKey) } ?? 0
            var changes = RecordChanges()
            changes["\(owner)/items/\(sku)"] = quantity > 0 ? Data(String(quantity).utf8) : nil
            changes[versionKey] = Data(String(version + 1).utf8)
            try tx.apply("carts", changes: changes)
            let body = #"{"owner":"\#(owner)","sku":"\#(sku)","quantity":\#(quantity),"version":\#(version + 1)}"#
            try tx.enqueue(OutboxMessage(kind: "cart.set-quantity", payload: Data(body.utf8), orderingKey: "cart/\(owner)"))
        }
    }
}
// END EXAMPLE

/// The seed's cart, done right: edits are record changes plus outbox operations in one
/// transaction, behind one protocol with a persistent and an in-memory store.
@Suite struct CartExampleTests {
    static func stores(_ directory: URL) -> [(String, any CartStore, RecordStore)] {
        let persistent = RecordCartStore.persistent(at: directory.appendingPathComponent("carts.sqlite"))
        let memory = RecordCartStore.inMemory()
        return [("persistent", persistent, persistent.store), ("in-memory", memory, memory.store)]
    }

    @Test func `edits change only their records and queue one operation each, in order`() async throws {
        try await withTemporaryDirectory { directory in
            for (name, carts, store) in Self.stores(directory) {
                try await carts.setQuantity(2, of: "tea", for: "ana")
                try await carts.setQuantity(1, of: "milk", for: "ana")
                try await carts.setQuantity(0, of: "tea", for: "ana")
                try await carts.setQuantity(5, of: "rice", for: "bob")
                #expect(try await carts.cart(of: "ana") == Cart(owner: "ana", items: ["milk": 1], version: 3), "\(name)")
                #expect(try await carts.cart(of: "bob") == Cart(owner: "bob", items: ["rice": 5], version: 1), "\(name)")
                let pending = try await store.outbox.pending()
                #expect(pending.map(\.orderingKey) == ["cart/ana", "cart/ana", "cart/ana", "cart/bob"], "\(name)")
                #expect(String(decoding: pending[2].payload, as: UTF8.self) == #"{"owner":"ana","sku":"tea","quantity":0,"version":3}"#)

                // Delivered in order per cart; a failed edit queues nothing.
                let transport = ScriptedTransport()
                #expect(try await OutboxProcessor.testing(store, transport, clock: TestClock()).deliverDue().delivered == 4)
                #expect(transport.attempts.filter { $0.orderingKey == "cart/ana" }.map(\.id) == pending.prefix(3).map(\.id))
                try await store.failNextCommitForTesting()
                await #expect(throws: RecordStoreError.self) { try await carts.setQuantity(9, of: "tea", for: "ana") }
                #expect(try await carts.cart(of: "ana").version == 3)
                #expect(try await store.outbox.pending().isEmpty)
            }
        }
    }

    @Test func `a version or quantity that is not a number is an error, never 0, and nothing is written`() async throws {
        try await withTemporaryDirectory { directory in
            for (name, carts, store) in Self.stores(directory) {
                try await carts.setQuantity(2, of: "tea", for: "ana")
                try await store.put("carts", key: "ana/version", data: Data("two".utf8))
                await #expect(throws: UnreadableCartRecord.self, "\(name)") { try await carts.cart(of: "ana") }
                let edit = await #expect(throws: UnreadableCartRecord.self, "\(name)") {
                    try await carts.setQuantity(3, of: "tea", for: "ana")
                }
                #expect(edit?.key == "ana/version")
                #expect(try await store.value("carts", key: "ana/items/tea") == Data("2".utf8), "nothing was written")
                #expect(try await store.outbox.pending().count == 1, "nothing more was queued")
                try await store.put("carts", key: "ana/version", data: Data("1".utf8))
                try await store.put("carts", key: "ana/items/milk", data: Data([0xFF]))
                let read = await #expect(throws: UnreadableCartRecord.self) { try await carts.cart(of: "ana") }
                #expect(read?.key == "ana/items/milk")
            }
        }
    }

    @Test func `the example in docs/OUTBOX.md is this file's code`() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/OUTBOX.md"), encoding: .utf8)
        let test = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let begin = "// BEGIN" + " EXAMPLE\n", end = "// END" + " EXAMPLE"
        let code = try #require(test.components(separatedBy: begin).dropFirst().first?.components(separatedBy: end).first)
        #expect(doc.contains("```swift\n" + code + "```"), "docs/OUTBOX.md's cart example differs from CartExampleTests")
    }

    @Test func `a persistent cart and its queued operations survive a restart`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("carts.sqlite")
            let carts = RecordCartStore.persistent(at: url)
            try await carts.setQuantity(3, of: "tea", for: "ana")
            await carts.store.close()
            let reopened = RecordCartStore.persistent(at: url)
            #expect(try await reopened.cart(of: "ana") == Cart(owner: "ana", items: ["tea": 3], version: 1))
            #expect(try await reopened.store.outbox.pending().map(\.kind) == ["cart.set-quantity"])
        }
    }
}
