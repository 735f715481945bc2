import TestHelpers
import Foundation
import RecordKeeper
import Testing

/// Two processes write different keys of one store at the same time, through the store's
/// own locking and busy timeout.
@Suite struct MultiProcessTests {
    static let writesPerProcess = isLongMode ? 3_000 : 400

    @Test(arguments: ["new store", "existing store"])
    func `two processes writing different keys keep every write and see no busy error`(start: String) async throws {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.sqlite")
            if start == "existing store" {
                // Opened and migrated before the writers start; otherwise both race to create it.
                try await RecordStore(url: url).put("shared", key: "seed", data: Data("0"))
            }
            let count = Self.writesPerProcess
            let writers = try ["left", "right"].map { prefix in
                try ChildProcess(
                    executable: helper,
                    arguments: ["writer", "--store", url.path, "--prefix", prefix, "--count", "\(count)"],
                    in: directory)
            }
            for writer in writers { try writer.start() }
            // This process reads meanwhile: a third connection on the same file.
            let reader = RecordStore(url: url)
            var reads = 0
            while writers.contains(where: { $0.process.isRunning }) {
                if FileManager.default.fileExists(atPath: url.path) {
                    _ = try await reader.read("shared")
                    reads += 1
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            for writer in writers {
                await writer.waitForExit()
                let errors = try writer.errorOutput()
                #expect(writer.process.terminationStatus == 0, "writer failed: \(errors)")
                #expect(!errors.contains("busy"), "\(errors)")
                #expect(try writer.output() == "done\n")
            }
            let store = RecordStore(url: url)
            #expect(try await store.integrityCheck() == ["ok"])
            let shared = try #require(try await store.read("shared"))
            for prefix in ["left", "right"] {
                for number in 0..<count {
                    let key = "\(prefix)-\(number)"
                    #expect(shared[key]?.starts(with: Data(key.utf8)) == true, "\(key) is missing")
                }
                let own = try #require(try await store.read("\(prefix)-own"))
                #expect(own.count == (0..<count).filter { $0 % 3 == 2 }.count)
            }
            #expect(shared.count == 2 * count + (start == "existing store" ? 1 : 0))
            reportFigure("multi-process (\(start)): 2 × \(count) writes, \(reads) concurrent reads, 0 lost, 0 busy errors")
        }
    }
}
