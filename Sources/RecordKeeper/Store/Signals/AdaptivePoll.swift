import Dispatch

/// Checks the store file on a one-shot timer whose interval doubles, from the schedule's
/// minimum up to its maximum, while checks find nothing, and starts again from the minimum
/// after a change or an event: quick after activity (commits come in bursts), rare when all is
/// quiet, and asleep while no consumer waits. Never a fixed-rate timer.
///
/// Alone (``Schedule/fallback``) it is how a platform without an event source (or a file
/// system whose events are not reported) notices other processes' commits: within a few
/// milliseconds during activity, within about a second when all was quiet. Behind an event
/// source (``Schedule/backstop``) it bounds the cost of a missed event, and re-checks shortly
/// after each event, since a commit becomes visible a moment after the write the event reports.
///
/// `@unchecked Sendable`: its state is touched only on the watcher's queue, where its timer fires.
final class AdaptivePoll: StoreChangeSignal, @unchecked Sendable {
    /// Intervals in milliseconds.
    struct Schedule: Equatable {
        let minimum: Int
        let maximum: Int
        /// The interval the next check waits.
        private(set) var current: Int

        init(minimum: Int, maximum: Int) {
            self.minimum = minimum
            self.maximum = maximum
            current = minimum
        }

        /// The fallback where there is no event source: 5 ms, doubling up to 1 s.
        static let fallback = Schedule(minimum: 5, maximum: 1_000)
        /// Behind an event source: 2 ms after an event, doubling up to 8 s.
        static let backstop = Schedule(minimum: 2, maximum: 8_000)

        /// After a check that found nothing: wait twice as long next time, up to the maximum.
        mutating func lengthen() { current = min(current * 2, maximum) }
        /// After a change or an event: from the minimum again.
        mutating func restart() { current = minimum }
    }

    private let queue: DispatchQueue
    private let wake: @Sendable () -> Void
    private(set) var schedule: Schedule
    private var timer: (any DispatchSourceTimer)?
    /// When the armed timer fires.
    private var deadline: DispatchTime?
    private var waiting = false
    private var cancelled = false
    /// Set when a check found a change (or an event arrived) since the timer last fired.
    private var restarted = false

    init(schedule: Schedule, queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
        self.schedule = schedule
        self.queue = queue
        self.wake = wake
    }

    func consumersWaiting(_ waiting: Bool) {
        self.waiting = waiting
        if waiting { arm() } else { disarm() }
    }

    func checked(foundChange: Bool) {
        guard foundChange else { return }
        restart()
    }

    /// An event source reported a write: look again after the minimum interval.
    func eventArrived() { restart() }

    private func restart() {
        restarted = true
        schedule.restart()
        if waiting { arm(sooner: true) }
    }

    func cancel() {
        cancelled = true
        disarm()
    }

    /// Arms the timer for the current interval, unless it is armed already (for a time no later
    /// than that, with `sooner`).
    private func arm(sooner: Bool = false) {
        guard !cancelled else { return }
        let due = DispatchTime.now() + .milliseconds(schedule.current)
        if let deadline, timer != nil, !sooner || deadline <= due { return }
        let timer = self.timer ?? makeTimer()
        // A tenth of the interval of slack lets the system coalesce wake-ups.
        timer.schedule(deadline: due, leeway: .microseconds(max(1_000, schedule.current * 100)))
        deadline = due
    }

    private func makeTimer() -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.resume()
        self.timer = timer
        return timer
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
        deadline = nil
    }

    private func fire() {
        guard !cancelled else { return }
        deadline = nil
        restarted = false
        wake()
        // Unless the check found a change (which restarted the schedule), wait longer.
        if !restarted { schedule.lengthen() }
        if waiting { arm() }
    }
}
