import Foundation
import TestHelpers
@testable import RecordKeeper

/// What `format-9.sqlite` holds: a cart's records and its outbox, with attempts that never
/// reached the server counted apart.
enum FormatNineFixture {
    static let offline = UUID(uuidString: "00000000-0000-0000-0000-000000000901")!
    static let refused = UUID(uuidString: "00000000-0000-0000-0000-000000000902")!
    static let fresh = UUID(uuidString: "00000000-0000-0000-0000-000000000903")!
    static let carts = ["ana": Data(#"{"items":["tea"]}"#.utf8)]
}

extension FixtureWriters {
    /// `format-9.sqlite` (format 9, outbox attempts that never reached the server): collection
    /// `carts` with `ana`, and three operations (ids `…0901`–`…0903`):
    /// - `cart.update` on key `cart/ana`, attempted three times with no network and once answered
    ///   503: `attempts` 4, `unreachable_attempts` 3, pending;
    /// - `cart.checkout`, refused for good (422): a dead letter, 1 attempt, none unreachable;
    /// - `cart.note`, never attempted.
    static func writeFormat9(to url: URL) async throws {
        let store = RecordStore(url: url)
        try await store.apply("carts", changes: RecordChanges(upserts: FormatNineFixture.carts))
        try await store.enqueue([
            OutboxMessage(id: FormatNineFixture.offline, kind: "cart.update", payload: Data(#"{"cart":"ana"}"#.utf8), orderingKey: "cart/ana"),
            OutboxMessage(id: FormatNineFixture.refused, kind: "cart.checkout", payload: Data(#"{"cart":"bob"}"#.utf8)),
        ])
        let clock = TestClock()
        let transport = ScriptedTransport([
            "cart.update": [.offline("no network"), .offline("no network"), .offline("no network"), .retry("503 busy", after: nil)],
            "cart.checkout": [.reject("422 the cart is empty")],
        ])
        let processor = OutboxProcessor.testing(store, transport, clock: clock)
        for _ in 0..<4 {
            try await processor.deliverDue()
            clock.advance(.seconds(3600))
        }
        try await store.enqueue([OutboxMessage(id: FormatNineFixture.fresh, kind: "cart.note", payload: Data(#"{}"#.utf8))])
        await store.close()
    }
}
