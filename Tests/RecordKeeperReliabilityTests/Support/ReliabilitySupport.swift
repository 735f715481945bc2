import RecordKeeperTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// True in the longer local mode (`RECORDKEEPER_LONG=1`).
let isLongMode: Bool = {
    let value = ProcessInfo.processInfo.environment["RECORDKEEPER_LONG"] ?? ""
    return !value.isEmpty && value != "0"
}()

/// An integer from the environment, for replaying a seed or scaling a run.
func environmentInteger(_ name: String) -> UInt64? {
    ProcessInfo.processInfo.environment[name].flatMap { UInt64($0) }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476C_E5B9_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// True with probability `1/oneIn`.
    mutating func chance(_ oneIn: Int) -> Bool { below(oneIn) == 0 }

    mutating func bytes(_ count: Int) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var index = 0
            while index < buffer.count {
                var word = next()
                for _ in 0..<8 where index < buffer.count {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
        }
        return data
    }
}

extension Data {
    init(_ string: String) { self = Data(string.utf8) }
}

extension BuildProducts {
    static let crashHelper = executable(named: "recordkeeper-crashtest")
    static let tool = executable(named: "recordkeeper")
}

/// A child process whose output goes to files (so a large output can never block on a pipe).
final class ChildProcess {
    let process = Process()
    let outputURL: URL
    let errorURL: URL

    init(executable: URL, arguments: [String], in directory: URL, input: Data? = nil) throws {
        let id = UUID().uuidString
        outputURL = directory.appendingPathComponent(".out-\(id)")
        errorURL = directory.appendingPathComponent(".err-\(id)")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil),
            FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        if let input {
            let inputURL = directory.appendingPathComponent(".in-\(id)")
            try input.write(to: inputURL)
            process.standardInput = try FileHandle(forReadingFrom: inputURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
    }

    func start() throws { try process.run() }

    func kill() { _ = Glibc_kill(process.processIdentifier, SIGKILL) }

    /// Waits for the process to end without blocking a cooperative thread for long.
    func waitForExit() async {
        while process.isRunning {
            do { try await Task.sleep(for: .milliseconds(5)) } catch { break }
        }
        process.waitUntilExit()
    }

    /// Waits until the process has written something to stdout (or has ended).
    func waitForOutput(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            let attributes = try FileManager.default.attributesOfItem(atPath: outputURL.path)
            if let size = attributes[.size] as? NSNumber, size.intValue > 0 { return }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    func output() throws -> String { String(decoding: try Data(contentsOf: outputURL), as: UTF8.self) }
    func errorOutput() throws -> String { String(decoding: try Data(contentsOf: errorURL), as: UTF8.self) }

    func removeFiles() throws {
        try FileManager.default.removeItem(at: outputURL)
        try FileManager.default.removeItem(at: errorURL)
    }
}

private func Glibc_kill(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }

/// Runs a shell command (mount, chattr); returns its exit status.
@discardableResult
func runCommand(_ path: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
}

/// Figures a suite reports for docs/RELIABILITY.md, printed as one `RELIABILITY` line.
func reportFigure(_ line: String) {
    print("RELIABILITY: \(line)")
}
