import Foundation

extension Duration {
    /// The duration in seconds as a Double.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}

enum Stats {
    static func median(_ values: [Double]) -> Double {
        percentile(values, 0.5)
    }

    /// Nearest-rank percentile with linear interpolation; `fraction` in 0...1.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        let weight = position - Double(lower)
        return sorted[lower] * (1 - weight) + sorted[upper] * weight
    }
}

/// Times one synchronous block.
@inline(__always)
func measure(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return (clock.now - start).seconds
}

/// Times one asynchronous block.
@inline(__always)
func measureAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try await body()
    return (clock.now - start).seconds
}

/// The CPU time the whole process (every thread) has used so far, in seconds: beside a
/// wall-clock time, it shows work spread over several threads.
func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Memory figures of the current process, in bytes: from /proc/self/status on Linux; the peak
/// from `getrusage` on Apple platforms.
enum ProcessMemory {
    #if os(Linux)
        static func status(_ field: String) -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
            for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
                let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
                return Int(digits).map { $0 * 1024 }
            }
            return nil
        }

        /// Peak resident set size (VmHWM).
        static var peakResident: Int? { status("VmHWM") }
        /// Current resident set size (VmRSS).
        static var resident: Int? { status("VmRSS") }
    #elseif canImport(Darwin)
        /// Peak resident set size (`ru_maxrss`, which Darwin reports in bytes).
        static var peakResident: Int? {
            var usage = rusage()
            guard getrusage(RUSAGE_SELF, &usage) == 0 else { return nil }
            return Int(usage.ru_maxrss)
        }

        /// Current resident set size: not measured on Darwin (Mach's `task_info` needs the
        /// global `mach_task_self_`, which Swift 6 refuses as shared mutable state), so W6's
        /// growth there is its peak.
        static var resident: Int? { nil }
    #else
        static var peakResident: Int? { nil }
        static var resident: Int? { nil }
    #endif

    /// A child's `ru_maxrss` (from `wait4`) in bytes: Linux reports kilobytes, Darwin bytes.
    static func bytes(maxResidentSetSize value: Int) -> Int {
        #if canImport(Darwin)
            value
        #else
            value * 1024
        #endif
    }
}

/// Progress lines on stderr.
func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
