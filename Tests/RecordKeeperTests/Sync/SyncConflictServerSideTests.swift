import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// A conflict's server side follows the server while the device's later edit is pending: a
/// newer server value pulled meanwhile is what the conflict shows, and what keeping the
/// server's value writes.
@Suite struct SyncConflictServerSideTests {
    private func value(_ store: RecordStore) async throws -> String? {
        try await store.value("notes", key: "r").map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: StoreKind.allCases)
    func `a newer server value pulled while an edit is pending is the conflict's server side`(kind: StoreKind) async throws {
        try await withSyncingDevices(kind, collections: ["notes"]) { stores, a, b in
            try await stores[0].put("notes", key: "r", data: Data("a1".utf8))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[0].put("notes", key: "r", data: Data("a2".utf8))
            try await stores[1].put("notes", key: "r", data: Data("b2".utf8))
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await stores[1].syncConflicts().map(\.server) == [Data("a2".utf8)])

            // B edits again (pending); A writes once more; B pulls without pushing.
            try await stores[1].put("notes", key: "r", data: Data("b3".utf8))
            try await stores[0].put("notes", key: "r", data: Data("a3".utf8))
            _ = try await a.sync()
            _ = try await b.pull()
            #expect(try await stores[1].syncConflicts().map(\.server) == [Data("a3".utf8)])

            try await stores[1].resolveSyncConflict("notes", key: "r", keeping: .server)
            #expect(try await value(stores[1]) == "a3")
            _ = try await b.sync()
            _ = try await a.sync()
            #expect(try await value(stores[0]) == "a3")
            #expect(try await value(stores[1]) == "a3")
            // Both go on from the server's latest version: a later edit on B is no conflict.
            try await stores[1].put("notes", key: "r", data: Data("b4".utf8))
            let report = try await b.sync()
            #expect(report.newConflicts.isEmpty)
            _ = try await a.sync()
            #expect(try await value(stores[0]) == "b4")
        }
    }
}
