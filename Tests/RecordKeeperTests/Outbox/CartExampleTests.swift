import RecordKeeperTestSupport
import Foundation
import Testing
@testable import RecordKeeper

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

/// Carts in a RecordKeeper store: one record per item (`<owner>/items/<sku>`) and one for the
/// version (`<owner>/version`), so an edit writes only what it changes.
struct RecordCartStore: CartStore {
    let store: RecordStore

    /// Carts kept in a file: they and their queued operations survive restarts.
    static func persistent(at url: URL) -> RecordCartStore { RecordCartStore(store: RecordStore(url: url)) }
    /// Carts in memory (tests, previews): the same engine and code paths.
    static func inMemory() -> RecordCartStore { RecordCartStore(store: .inMemory()) }

    func cart(of owner: String) async throws -> Cart {
        let prefix = "\(owner)/items/"
        // The version and the items from one snapshot.
        return try await store.snapshot { snapshot in
            var cart = Cart(owner: owner, items: [:], version: 0)
            try snapshot.forEachRecord(in: "carts") { record in
                if record.key == "\(owner)/version" {
                    cart.version = Int(String(decoding: record.data, as: UTF8.self)) ?? 0
                } else if record.key.hasPrefix(prefix) {
                    cart.items[String(record.key.dropFirst(prefix.count))] = Int(String(decoding: record.data, as: UTF8.self))
                }
            }
            return cart
        }
    }

    func setQuantity(_ quantity: Int, of sku: String, for owner: String) async throws {
        try await store.write { tx in
            let stored = try tx.value("carts", key: "\(owner)/version")
            let version = (stored.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0) + 1
            var changes = RecordChanges()
            changes["\(owner)/items/\(sku)"] = quantity > 0 ? Data(String(quantity).utf8) : nil
            changes["\(owner)/version"] = Data(String(version).utf8)
            try tx.apply("carts", changes: changes)
            let body = #"{"owner":"\#(owner)","sku":"\#(sku)","quantity":\#(quantity),"version":\#(version)}"#
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
