import Foundation
import HarnessSupport
import RecordKeeper

/// `recordkeeper-loadtest latency`: a device holding a live pull on relay A, another pushing
/// through relay B; per sample, the time from sending the push to the page in the first
/// device's hands (an upper bound of commit → page: the commit happens inside the push).
struct LatencyRun {
    let options: LoadTestOptions
    let cluster: Cluster

    struct Figures: Codable, Sendable {
        var date: String
        var loadAverage: String
        var build: String
        var samples: Int
        var databases: Int
        /// Push sent (relay B) → page received (relay A).
        var p50ms: Double
        var p99ms: Double
        var maxms: Double
        /// Push answered → page received (negative: the page came before the push's answer).
        var afterAnswerP50ms: Double
        var pushP50ms: Double
        var relayHoldsPulls: Bool
    }

    func run() async throws -> Figures {
        let space = "latency"
        let listener = try cluster.client(relay: 0, space: space)
        let pusher = try cluster.client(relay: 1, space: space)
        var cursor = try await listener.pull(space: space, after: .start, limit: 1000).cursor
        var random = SplitMix64(seed: options.seed)
        var sent: [Double] = []
        var answered: [Double] = []
        var pushes: [Double] = []
        let clock = ContinuousClock()
        let wait = Duration.seconds(30)
        for index in 0..<options.samples {
            let key = "sample-\(index)"
            let arrival = Task { [cursor] () throws -> (SyncPage, ContinuousClock.Instant) in
                while true {
                    let page = try await listener.pull(space: space, after: cursor, limit: 100, collections: nil, wait: wait)
                    let now = clock.now
                    if page.changes.contains(where: { $0.key == key }) { return (page, now) }
                    if !page.changes.isEmpty || page.hasMore {
                        throw LoadTestFailure("latency: the live pull answered changes other than \(key)")
                    }
                }
            }
            // The load's own pacing: give the pull time to reach relay A and be held there.
            try await clock.sleep(for: .milliseconds(30 + Int(random.next() % 20)))
            let operation = SyncOperation(
                device: "latency-pusher", sequence: Int64(index + 1),
                changes: [SyncChange(collection: loadCollection, key: key, value: .payload(Data("{\"n\":\(index)}".utf8)), base: nil)])
            let start = clock.now
            let outcomes = try await pusher.push(space: space, operations: [operation])
            let end = clock.now
            guard outcomes.first?.result.appliedVersion != nil else {
                throw LoadTestFailure("latency: push \(index) was not applied: \(outcomes)")
            }
            let (page, received) = try await arrival.value
            cursor = page.cursor
            sent.append((received - start).seconds * 1000)
            answered.append((received - end).seconds * 1000)
            pushes.append((end - start).seconds * 1000)
        }
        let gauges = await cluster.gauges(relay: 0)
        return Figures(
            date: ISO8601DateFormatter().string(from: Date()),
            loadAverage: LoadTestMachine.loadAverage,
            build: isDebugBuild ? "debug" : "release", samples: sent.count, databases: cluster.databases.count,
            p50ms: percentile(sent, 0.5), p99ms: percentile(sent, 0.99), maxms: sent.max() ?? 0,
            afterAnswerP50ms: percentile(answered, 0.5), pushP50ms: percentile(pushes, 0.5),
            relayHoldsPulls: gauges.keys.contains { $0.contains("held") || $0.contains("waiting_pulls") })
    }

    static func text(_ figures: Figures) -> String {
        func f(_ value: Double) -> String { String(format: "%.2f", value) }
        return """
            recordkeeper-loadtest latency (\(figures.build) build) \(figures.date), load average \(figures.loadAverage)
              push through relay B → page of a live pull held on relay A, \(figures.samples) samples, \(figures.databases) database(s)
              p50 \(f(figures.p50ms)) ms (target ≤ 10: \(f(figures.p50ms / 10))×), p99 \(f(figures.p99ms)) ms (target ≤ 50: \(f(figures.p99ms / 50))×), max \(f(figures.maxms)) ms
              page after the push's answer: p50 \(f(figures.afterAnswerP50ms)) ms; the push itself: p50 \(f(figures.pushP50ms)) ms
              relay A's /metrics \(figures.relayHoldsPulls ? "has" : "has no") gauge of held pulls
            """
    }
}

var isDebugBuild: Bool {
    #if DEBUG
        true
    #else
        false
    #endif
}

/// The `fraction` percentile (nearest rank) of `values`; 0 when empty.
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}
