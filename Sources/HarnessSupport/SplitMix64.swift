/// A small deterministic generator (SplitMix64, Steele, Lea and Flood 2014), so that a seed
/// always gives the same run: randomized tests, the crash helper's batches (the test and the
/// helper process derive the same batches from one seed), the benchmark's data and the load
/// test's edits.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (`bound` > 0).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// True with probability `1/oneIn`.
    public mutating func chance(_ oneIn: Int) -> Bool { below(oneIn) == 0 }

    /// A uniform value in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
