/// Progress of a long import or export on stderr ("exported 120000 records, 48000/s"), shown
/// only when stderr is a terminal and `--quiet` was not given. Draws at the 1024th record,
/// then checks the clock every 1024 records and redraws at most four times a second; clears
/// its line when done. (Drawing first after a delay instead would make whether a line
/// appears at all depend on the machine's speed.)
final class ProgressReporter {
    private let verb: String
    private let isEnabled: Bool
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDrawn: ContinuousClock.Instant
    private var hasDrawn = false
    private(set) var count = 0

    init(verb: String, isEnabled: Bool) {
        self.verb = verb
        self.isEnabled = isEnabled
        self.start = clock.now
        self.lastDrawn = start
    }

    /// Whether progress should be drawn at all: stderr is a terminal and not `--quiet`.
    static func shouldShow(quiet: Bool) -> Bool {
        !quiet && SystemCalls.isTerminal(SystemCalls.standardError)
    }

    @inline(__always)
    func advance() {
        count += 1
        guard isEnabled, count & 0x3FF == 0 else { return }
        let now = clock.now
        guard !hasDrawn || now - lastDrawn >= .milliseconds(250) else { return }
        lastDrawn = now
        draw(now: now)
    }

    func finish() {
        guard isEnabled, hasDrawn else { return }
        StandardError.write("\r\u{1B}[K")
    }

    private func draw(now: ContinuousClock.Instant) {
        let elapsed = now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
        StandardError.write("\r\(verb) \(count) records, \(rate)/s\u{1B}[K")
        hasDrawn = true
    }
}
