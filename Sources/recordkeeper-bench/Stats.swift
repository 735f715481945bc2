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

/// Memory figures of the current process from /proc/self/status (Linux), in bytes.
enum ProcessMemory {
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
}

/// Progress lines on stderr.
func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
