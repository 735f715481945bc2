import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper

@Suite struct StoreFileCopyTests {
    /// The application id stored in the main file's header (bytes 68–71, big-endian).
    private func applicationID(ofMainFile url: URL) throws -> Int32 {
        let bytes = [UInt8](try Data(contentsOf: url).prefix(100))
        return Int32(bitPattern: bytes[68..<72].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    @Test func `a copy of the main file alone of a store still open opens as a store`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("notes", key: "a", data: Data("1"))
            // Not closed: the log still exists, yet the main file carries the format.
            #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
            #expect(try applicationID(ofMainFile: url) == StoreFormat.applicationID)

            let copyURL = directory.appendingPathComponent("copy.sqlite")
            try FileManager.default.copyItem(at: url, to: copyURL)
            let copy = RecordStore(url: copyURL)
            // The record itself may still be only in the original's log; the copy is a store
            // (never turned into a new one) whatever it holds.
            #expect(try await copy.info().formatVersion == StoreFormat.currentVersion)
            let copied = try await copy.read("notes")
            #expect(copied == nil || copied == ["a": Data("1")])
            try await copy.put("notes", key: "b", data: Data("2"))
            await copy.close()
            await store.close()
        }
    }

    @Test func `after close the main file alone holds every record`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.replace("notes", values: ["a": Data("1"), "b": Data("2")])
            try await store.put("notes", key: "c", data: Data("3"))
            await store.close()
            #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
            let copyURL = directory.appendingPathComponent("copy.sqlite")
            try FileManager.default.copyItem(at: url, to: copyURL)
            #expect(try await RecordStore(url: copyURL).read("notes") == ["a": Data("1"), "b": Data("2"), "c": Data("3")])
        }
    }

    @Test func `close truncates the log even while another connection keeps the file open`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let other = RecordStore(url: url)
            #expect(try await other.read("notes") == nil)  // only reads: the store file does not exist yet
            let store = RecordStore(url: url)
            try await store.put("notes", key: "a", data: Data("1"))
            #expect(try await other.value("notes", key: "a") == Data("1"))  // now its reader is open
            try await store.put("notes", key: "b", data: Data("2"))
            await store.close()
            // The other store's reader keeps the log file open, but the checkpoint emptied it.
            let walSize = try FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? NSNumber
            #expect(walSize?.intValue == 0)
            await other.close()
        }
    }

    @Test func `commits do not checkpoint; a checkpoint scheduled on the store's executor does`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(durability: .normal))
            try await store.put("c", key: "k", data: Data("0"))
            let mainFileSize = { try (FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue }
            let initial = try mainFileSize()
            // Each commit of a new key in its own page-sized payload adds WAL frames; stop one
            // commit short of the threshold: no checkpoint has run, the main file is as it was.
            let payload = Data(repeating: 0x41, count: 3000)
            var count = 0
            while try await store.info().walBytes.map({ Int($0) / 4120 }) ?? 0 < StoreCore.checkpointThreshold - 8 {
                count += 1
                try await store.put("c", key: "k\(count)", data: payload)
            }
            #expect(try mainFileSize() == initial)
            for extra in 0..<10 { try await store.put("c", key: "extra\(extra)", data: payload) }
            // A write that runs on the store's executor runs after the scheduled checkpoint.
            try await store.replace("after", values: [:])
            #expect(try mainFileSize() ?? 0 > initial ?? 0)
            #expect(try await store.read("c")?.count == count + 11)
        }
    }
}
