import Foundation
import HarnessSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Running programs: brief commands to their end, long-running ones (relays) with a handshake on
/// a line of their output.
enum Commands {
    struct Result: Sendable {
        var status: Int32
        var output: String
    }

    /// Runs `executable` with `arguments` to its end, off the cooperative pool; standard output
    /// and error together in ``Result/output``.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Result {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return await withCheckedContinuation { continuation in
            Thread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: Result(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self)))
            }.start()
        }
    }

    /// Runs a command that must succeed.
    /// - Throws: ``LoadTestFailure`` with its output when it exits non-zero.
    static func check(_ executable: String, _ arguments: [String], _ what: String) async throws {
        let result = try await run(executable, arguments)
        guard result.status == 0 else {
            throw LoadTestFailure("\(what) failed (exit \(result.status)): \(result.output)")
        }
    }

    /// Reads `pipe` line by line on a thread of its own until its end; returns the first line
    /// for which `match` holds (then keeps draining), or nil when the pipe ends first.
    static func firstLine(of pipe: Pipe, where match: @escaping @Sendable (String) -> Bool) async -> String? {
        await withCheckedContinuation { continuation in
            Thread {
                var resumed = false
                var buffer = Data()
                let handle = pipe.fileHandleForReading
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    if resumed { continue }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        if !resumed && match(line) {
                            resumed = true
                            continuation.resume(returning: line)
                        }
                    }
                }
                if !resumed { continuation.resume(returning: nil) }
            }.start()
        }
    }
}

/// What /proc says about a process: resident memory now and at its peak, and its threads.
struct ProcessFigures: Sendable, Codable {
    var rssBytes: Int
    var peakRSSBytes: Int
    var threads: Int

    /// Reads `/proc/PID/status`; nil when it cannot be read (not Linux, the process ended).
    static func read(pid: Int32) -> ProcessFigures? {
        #if os(Linux)
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        #else
            let text: String? = nil
            guard let text else { return nil }
        #endif
        var figures = ProcessFigures(rssBytes: 0, peakRSSBytes: 0, threads: 0)
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count >= 2, let value = Int(parts[1]) else { continue }
            switch parts[0] {
            case "VmRSS:": figures.rssBytes = value * 1024
            case "VmHWM:": figures.peakRSSBytes = value * 1024
            case "Threads:": figures.threads = value
            default: break
            }
        }
        return figures
    }
}

/// The machine the figures were measured on.
enum LoadTestMachine {
    /// The three load averages from /proc/loadavg, or "unknown" (not Linux).
    static var loadAverage: String {
        #if os(Linux)
            return (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
                .split(separator: " ").prefix(3).joined(separator: " ") ?? "unknown"
        #else
            return "unknown"
        #endif
    }
}
