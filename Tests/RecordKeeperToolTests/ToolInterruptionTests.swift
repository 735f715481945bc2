import TestHelpers
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (SIGINT) or SIGTERM during an import into a new path leaves nothing where there was
/// nothing: no store, no `-wal`, `-shm` or `-observers` file, no directory the import made.
@Suite struct ToolInterruptionTests {
    /// Opens the FIFO at `path` for writing once the tool has it open for reading (polling:
    /// a FIFO without a reader refuses a non-blocking writer), then writes blocking.
    private func openWriter(_ path: String) async throws -> Int32 {
        var descriptor: Int32 = -1
        try await ToolProcess.waitUntil("the tool opening its input") {
            descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if descriptor < 0, errno != ENXIO { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            return descriptor >= 0
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    private func write(_ text: String, to descriptor: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { break }
            offset += written
        }
    }

    // The tool's test gate exists in debug builds only, as this test does.
    #if DEBUG
    @Test(arguments: [SIGINT, SIGTERM])
    func `an interrupted import into a new path leaves nothing there`(signal: Int32) async throws {
        try await withTemporaryDirectory { directory in
            let outputs = directory.appendingPathComponent("outputs", isDirectory: true)
            let work = directory.appendingPathComponent("work", isDirectory: true)
            for url in [outputs, work] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
            let input = work.appendingPathComponent("input.ndjson")
            let lines = (0..<200).map { #"{"collection":"c","key":"k\#($0)","value":\#($0)}"# + "\n" }
            try Data(lines.joined().utf8).write(to: input)
            // The write pass opens the gate (a FIFO, debug builds only) inside its transaction,
            // once it created the store: the test knows the import is writing, and lets it go
            // on only after the signal.
            let gate = directory.appendingPathComponent("gate").path
            #expect(mkfifo(gate, 0o600) == 0)
            let store = work.appendingPathComponent("new/directory/store.sqlite").path
            let tool = try ToolProcess(
                ["import", input.path, "--store", store], in: work, outputDirectory: outputs,
                environment: ["RECORDKEEPER_TEST_IMPORT_GATE": gate])
            try tool.start()

            let writer = try await openWriter(gate)
            #expect(FileManager.default.fileExists(atPath: store))
            tool.send(signal)
            try await ToolProcess.waitUntil("the tool saying it was interrupted") {
                try tool.errorOutput().contains("interrupted")
            }
            close(writer)
            try await tool.waitForExit()

            let errors = try tool.errorOutput()
            #expect(tool.process.terminationReason == .uncaughtSignal, "\(errors)")
            #expect(tool.process.terminationStatus == signal)
            #expect(try FileManager.default.contentsOfDirectory(atPath: work.path) == ["input.ndjson"])
            #expect(try tool.errorOutput().hasPrefix("recordkeeper: interrupted ("))
        }
    }
    #endif

    @Test func `an import into an existing store that is interrupted changes nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let outputs = directory.appendingPathComponent("outputs", isDirectory: true)
            try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
            let runner = ToolRunner(directory: directory)
            #expect(try await runner.runOnStore(["put", "c", "kept", "1"]).status == 0)
            let before = try await runner.runOnStore(["export"]).output
            let fifo = directory.appendingPathComponent("input.ndjson").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let tool = try ToolProcess(["import", fifo, "--store", runner.storePath], in: directory, outputDirectory: outputs)
            try tool.start()
            let writer = try await openWriter(fifo)
            write(#"{"collection":"c","key":"new","value":2}"# + "\n", to: writer)
            tool.send(SIGINT)
            try await tool.waitForExit()
            close(writer)
            #expect(tool.process.terminationReason == .uncaughtSignal)
            #expect(try await runner.runOnStore(["export"]).output == before)
        }
    }
}
