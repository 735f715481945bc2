import Testing
import Foundation
@testable import RecordKeeper

/// Where a test's store lives; core behaviour runs against both.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case onDisk
    case inMemory

    var testDescription: String { rawValue }
}

/// A fresh temporary directory for one test, removed when the test's closure returns.
func withTemporaryDirectory(_ body: (URL) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("RecordKeeperTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer {
        // Make everything writable again so cleanup works after permission tests.
        _ = chmodRecursively(directory)
        do { try FileManager.default.removeItem(at: directory) } catch {
            Issue.record("could not remove the temporary directory \(directory.path): \(error)")
        }
    }
    try await body(directory)
}

@discardableResult
private func chmodRecursively(_ url: URL) -> Bool {
    chmod(url.path, 0o700)
    guard let enumerator = FileManager.default.enumerator(atPath: url.path) else { return false }
    for case let item as String in enumerator {
        chmod(url.appendingPathComponent(item).path, 0o700)
    }
    return true
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

/// A one-shot gate a test opens to let a suspended operation go on.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

/// Counts calls from any task.
final class Counter: Sendable {
    private let value = Protected(0)
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
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
