import TestHelpers
import Testing
import Foundation
@testable import RecordKeeper

/// Records events from a store's event handler.
final class EventLog: Sendable {
    private let events = Protected<[RecordStoreEvent]>([])
    func append(_ event: RecordStoreEvent) { events.withLock { $0.append(event) } }
    var all: [RecordStoreEvent] { events.withLock { $0 } }
}
