import RecordKeeperTestSupport
import Testing
import Foundation
@testable import RecordKeeper

/// Where a test's store lives; core behaviour runs against both.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case onDisk
    case inMemory

    var testDescription: String { rawValue }
}

/// Runs `body` with a new store of the given kind in a fresh directory.
func withStore(
    _ kind: StoreKind, options: RecordStore.Options = .init(),
    _ body: (RecordStore, URL) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        let url = directory.appendingPathComponent("records.sqlite")
        let store = kind == .onDisk ? RecordStore(url: url, options: options) : RecordStore.inMemory(options: options)
        try await body(store, url)
    }
}

extension Data {
    init(_ string: String) { self = Data(string.utf8) }
}

/// Records events from a store's event handler.
final class EventLog: Sendable {
    private let events = Protected<[RecordStoreEvent]>([])
    func append(_ event: RecordStoreEvent) { events.withLock { $0.append(event) } }
    var all: [RecordStoreEvent] { events.withLock { $0 } }
}

/// The bytes of a file, to prove it was left unchanged.
func contents(of url: URL) throws -> Data { try Data(contentsOf: url) }

/// POSIX permission bits of a file.
func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
