import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A load copies records out of SQLite in windows and decodes a large window on several
/// threads (`LoadWindow`): whatever the window sizes and thread counts, it must give exactly
/// what a decode of each record in turn gives, in key order, with the same failures.
@Suite struct RepositoryWindowedLoadTests {
    private struct Entry: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var number: Int
    }

    /// Window shapes: the standard one (a large load goes to several threads), tiny windows
    /// shared by three threads (many windows, uneven chunks), and one thread.
    private static let shapes: [LoadWindow.Limits] = [
        .standard,
        LoadWindow.Limits(records: 7, bytes: 1 << 20, recordsPerThread: 2, threads: 3),
        LoadWindow.Limits(records: 50, bytes: 100, recordsPerThread: 1, threads: 2),
        LoadWindow.Limits(records: 1_000, bytes: 1 << 20, recordsPerThread: 1_000, threads: 1),
        LoadWindow.Limits(records: 500, bytes: 1 << 20, recordsPerThread: 100, threads: 2),  // 3,000 = 6 full windows
        LoadWindow.Limits(records: 1_000, bytes: 1 << 20, recordsPerThread: 1_000_000, bytesPerThread: 1_000, threads: 2),
    ]

    private static func entries(_ count: Int) -> [Entry] {
        (0..<count).map { Entry(id: String(format: "k%05d", ($0 * 7_919) % count), number: $0) }
    }

    @Test(arguments: StoreKind.allCases, shapes.indices)
    func `a windowed load gives every item in key order and its versions are the base of saves`(
        kind: StoreKind, shape: Int
    ) async throws {
        try await withStore(kind) { store, _ in
            let count = 3_000  // over two standard threads' worth
            let entries = Self.entries(count)
            try await RecordRepository<Entry>(store: store, collection: "entries").save(entries)

            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            await repository.useLoadWindow(Self.shapes[shape])
            let loaded = try await repository.load()
            #expect(loaded == entries.sorted { $0.id < $1.id })
            #expect(try await repository.loadPartial() == PartialLoad(items: loaded, skipped: []))

            // Every loaded version is known: a save of any loaded item lands; one changed
            // meanwhile through another repository conflicts.
            let reloaded = try await repository.load()
            var first = reloaded[0], middle = reloaded[count / 2], last = reloaded[count - 1]
            middle.number = -1
            try await RecordRepository<Entry>(store: store, collection: "entries").save(middle, onConflict: .overwrite)
            first.number = -2
            last.number = -3
            try await repository.save(first)
            try await repository.save(last)
            middle.number = -4
            await #expect(throws: RecordConflict.self) { try await repository.save(middle) }
        }
    }

    @Test(arguments: StoreKind.allCases, shapes.indices)
    func `a windowed load fails on the first record in key order that does not decode, and a partial load skips exactly those`(
        kind: StoreKind, shape: Int
    ) async throws {
        try await withStore(kind) { store, _ in
            let count = 2_500
            let entries = Self.entries(count)
            try await RecordRepository<Entry>(store: store, collection: "entries").save(entries)
            // Spread over windows and chunks: the first record, neighbours, a window's last,
            // the middle, the last record.
            let broken = [0, 5, 6, 13, 14, 1_250, 2_047, 2_048, count - 1].map { String(format: "k%05d", $0) }
            for (index, key) in broken.enumerated() {
                let payload = index.isMultiple(of: 2)
                    ? #"{"id":"\#(key)"}"#                        // no number
                    : #"{"id":"other","number":1}"#              // another key's item
                try await store.put("entries", key: key, data: Data(payload.utf8))
            }

            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            await repository.useLoadWindow(Self.shapes[shape])
            let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
            #expect(error?.key == broken[0])
            #expect(error?.code == .undecodableRecord)

            let partial = try await repository.loadPartial()
            #expect(partial.skipped.map(\.key) == broken)
            #expect(partial.skipped.map(\.error.code) == broken.indices.map { $0.isMultiple(of: 2) ? .undecodableRecord : .keyMismatch })
            let expected = entries.filter { !broken.contains($0.id) }.sorted { $0.id < $1.id }
            #expect(partial.items == expected)

            // Only the decoded items' versions were remembered: a skipped key still conflicts.
            await #expect(throws: RecordConflict.self) {
                try await repository.save(Entry(id: broken[3], number: 9))
            }
            try await repository.save(Entry(id: expected[1].id, number: 9))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a windowed load fails on the first broken record in key order, not the first chunk to finish`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Entry>(store: store, collection: "entries").save(Self.entries(60))
            // Windows of 40 in four chunks of 10: chunk 1, chunk 3, and the second window.
            for position in [17, 35, 45] {
                try await store.put("entries", key: String(format: "k%05d", position), data: Data("{}".utf8))
            }
            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            await repository.useLoadWindow(LoadWindow.Limits(records: 40, bytes: 1 << 20, recordsPerThread: 1, threads: 2))
            for _ in 0..<5 {
                let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
                #expect(error?.key == "k00017")
                #expect(try await repository.loadPartial().skipped.map(\.key) == ["k00017", "k00035", "k00045"])
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a record larger than a whole window is loaded in a window of its own`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var entries = Self.entries(30)
            entries[12] = Entry(id: "k00012-large", number: 12)
            try await RecordRepository<Entry>(store: store, collection: "entries").save(entries)
            let large = #"{"id":"k00012-large","number":12,"padding":""# + String(repeating: "x", count: 200_000) + #""}"#
            try await store.put("entries", key: "k00012-large", data: Data(large.utf8))
            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            await repository.useLoadWindow(LoadWindow.Limits(records: 8, bytes: 10_000, recordsPerThread: 1, bytesPerThread: 1_000, threads: 2))
            #expect(try await repository.load() == entries.sorted { $0.id < $1.id })
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a windowed load whose only broken record is in its last window still fails`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await RecordRepository<Entry>(store: store, collection: "entries").save(Self.entries(40))
            try await store.put("entries", key: "k00039", data: Data(#"{"id":"k00039","number":"x"}"#.utf8))
            let repository = RecordRepository<Entry>(store: store, collection: "entries")
            await repository.useLoadWindow(LoadWindow.Limits(records: 8, bytes: 1 << 20, recordsPerThread: 2, threads: 2))
            let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
            #expect(error?.key == "k00039")
            #expect(try await repository.loadPartial().items.count == 39)
        }
    }
}
