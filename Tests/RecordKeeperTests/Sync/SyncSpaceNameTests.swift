import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Space names are normalized to NFC like collection names and keys: "café" typed as é or as
/// e + combining accent is one space on the server, which compares bytes.
@Suite struct SyncSpaceNameTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// Records the bytes of the space each request names.
    actor SpaceRecorder: RecordSyncServer {
        let inner = InMemorySyncServer()
        private(set) var spaces: Set<[UInt8]> = []

        func push(space: String, operations: [SyncOperation]) async throws -> [SyncOutcome] {
            spaces.insert(Array(space.utf8))
            return try await inner.push(space: space, operations: operations)
        }

        func pull(space: String, after cursor: SyncCursor, limit: Int) async throws -> SyncPage {
            spaces.insert(Array(space.utf8))
            return try await inner.pull(space: space, after: cursor, limit: limit)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `devices that spell a space in either normal form sync one space, stored in NFC`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { devices in
            let server = SpaceRecorder()
            try await devices[0].put("notes", key: "a", data: Data("1".utf8))
            try await RecordSync(store: devices[0], server: server).start(space: Self.composed, collections: ["notes"])
            try await RecordSync(store: devices[1], server: server).start(space: Self.decomposed, collections: ["notes"])
            for device in devices { _ = try await RecordSync(store: device, server: server).sync() }
            #expect(await server.spaces == [Array(Self.composed.utf8)])
            #expect(try await devices[1].value("notes", key: "a") == Data("1".utf8))
            for device in devices {
                #expect(try await device.syncStatus()?.space.utf8.elementsEqual(Self.composed.utf8) == true)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a store that recorded its space before normalization keeps syncing that space`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 1) { devices in
            let store = devices[0]
            let server = SpaceRecorder()
            try await RecordSync(store: store, server: server).start(space: "x", collections: ["notes"])
            // As an older version stored it: the bytes it was given, here decomposed.
            try await store.write { transaction in
                try transaction.context.engine.syncState.set("space", Self.decomposed)
            }
            let sync = RecordSync(store: store, server: server)
            try await sync.start(space: Self.composed, collections: ["notes"])  // the same space
            try await store.put("notes", key: "a", data: Data("1".utf8))
            _ = try await sync.sync()
            #expect(await server.spaces == [Array(Self.decomposed.utf8)], "the server space it has always used")
            let other = await #expect(throws: SyncError.self) {
                try await sync.start(space: "caff\u{E8}", collections: ["notes"])
            }
            #expect(other?.code == .invalidRequest)
        }
    }
}
