public import Foundation
public import RecordKeeper
public import Testing

/// Where a test's store lives; core behaviour runs against both.
public enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case onDisk
    case inMemory

    public var testDescription: String { rawValue }

    /// A new store of this kind: a file at `url`, or in memory (`url` unused).
    public func makeStore(at url: URL, options: RecordStore.Options = .init()) -> RecordStore {
        self == .onDisk ? RecordStore(url: url, options: options) : RecordStore.inMemory(options: options)
    }
}

/// Runs `body` with a new store of the given kind in a fresh directory, on the caller's actor;
/// `url` is where the on-disk store's file is (or would be).
public func withStore(
    _ kind: StoreKind, options: RecordStore.Options = .init(), isolation: isolated (any Actor)? = #isolation,
    _ body: (RecordStore, URL) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        let url = directory.appendingPathComponent("records.sqlite")
        try await body(kind.makeStore(at: url, options: options), url)
    }
}
