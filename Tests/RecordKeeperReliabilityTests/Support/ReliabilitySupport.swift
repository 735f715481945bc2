import TestHelpers
import HarnessSupport
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

extension SplitMix64 {
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

extension BuildProducts {
    static let crashHelper = executable(named: "recordkeeper-crashtest")
    static let tool = executable(named: "recordkeeper")
}

/// Runs a system command (mount, chattr) to its end; returns its exit status, or -1 when it
/// could not be started.
@discardableResult
func runCommand(_ path: String, _ arguments: [String]) -> Int32 {
    do {
        return try ChildProcess.runBriefCommand(URL(fileURLWithPath: path), arguments, in: FileManager.default.temporaryDirectory).status
    } catch {
        return -1
    }
}

/// Figures a suite reports for docs/RELIABILITY.md, printed as one `RELIABILITY` line.
func reportFigure(_ line: String) {
    print("RELIABILITY: \(line)")
}
