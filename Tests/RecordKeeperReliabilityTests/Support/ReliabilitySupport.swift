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
