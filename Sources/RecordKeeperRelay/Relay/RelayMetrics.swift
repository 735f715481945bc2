import Foundation
import RecordKeeperSync

/// The relay's counters, exposed at `GET /metrics` in Prometheus' text format (0.0.4).
///
/// Labels are bounded: routes are the relay's own paths (or `unmatched`), statuses the ones
/// sent, results and reasons fixed names. Spaces, keys and tokens never become labels.
final class RelayMetrics: Sendable {
    /// Upper bounds of the latency histogram's buckets, in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram: Sendable {
        var counts = [Int](repeating: 0, count: RelayMetrics.buckets.count)
        var sum = 0.0
        var count = 0
    }

    private struct State: Sendable {
        var requests: [String: [Int: Int]] = [:]
        var latency: [String: Histogram] = [:]
        var operations: [String: Int] = [:]
        var pullPages = 0
        var pulledChanges = 0
        var refusals: [String: Int] = [:]
        var livePulls: [LivePullEnd: Int] = [:]
    }

    /// How a held live pull ended.
    enum LivePullEnd: String, CaseIterable, Sendable {
        /// A change committed (or was there already).
        case woken
        /// Its wait passed with nothing to answer.
        case timedOut = "timed_out"
        /// The relay shut down and answered it at once.
        case drained
    }

    private let state = Protected(State())

    func record(_ summary: HTTPRequestSummary) {
        let route = summary.route ?? "unmatched"
        let seconds = Double(summary.duration.components.seconds) + Double(summary.duration.components.attoseconds) / 1e18
        state.withLock { state in
            state.requests[route, default: [:]][summary.status, default: 0] += 1
            var histogram = state.latency[route] ?? Histogram()
            if let index = Self.buckets.firstIndex(where: { seconds <= $0 }) { histogram.counts[index] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            state.latency[route] = histogram
        }
    }

    /// Counts pushed operations by what happened to them.
    func recordOutcomes(_ outcomes: [PushedOperationKind]) {
        state.withLock { state in
            for kind in outcomes { state.operations[kind.rawValue, default: 0] += 1 }
        }
    }

    func recordPull(changes: Int) {
        state.withLock { state in
            state.pullPages += 1
            state.pulledChanges += changes
        }
    }

    /// Counts a live pull (a pull with `wait` above 0) by how it ended.
    func recordLivePull(_ end: LivePullEnd) {
        state.withLock { $0.livePulls[end, default: 0] += 1 }
    }

    /// Counts a refused request by reason (`expired`, `bad_signature`, `forbidden_space`…).
    func recordRefusal(_ reason: String) {
        state.withLock { $0.refusals[reason, default: 0] += 1 }
    }

    /// The text of `GET /metrics`; `gauges` are read at the time of the request.
    func render(gauges: [(name: String, help: String, value: Int)]) -> String {
        let state = state.withLock { $0 }
        var lines: [String] = []
        lines.append("# HELP recordkeeper_relay_requests_total Requests answered, by route and status.")
        lines.append("# TYPE recordkeeper_relay_requests_total counter")
        for route in state.requests.keys.sorted() {
            for (status, count) in state.requests[route, default: [:]].sorted(by: { $0.key < $1.key }) {
                lines.append("recordkeeper_relay_requests_total{route=\"\(route)\",status=\"\(status)\"} \(count)")
            }
        }
        lines.append("# HELP recordkeeper_relay_request_duration_seconds Time from request line to response, by route.")
        lines.append("# TYPE recordkeeper_relay_request_duration_seconds histogram")
        for route in state.latency.keys.sorted() {
            let histogram = state.latency[route]!
            var cumulative = 0
            for (bound, count) in zip(Self.buckets, histogram.counts) {
                cumulative += count
                lines.append(
                    "recordkeeper_relay_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(Self.format(bound))\"} \(cumulative)")
            }
            lines.append("recordkeeper_relay_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)")
            lines.append("recordkeeper_relay_request_duration_seconds_sum{route=\"\(route)\"} \(Self.format(histogram.sum))")
            lines.append("recordkeeper_relay_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)")
        }
        lines.append("# HELP recordkeeper_relay_operations_total Pushed operations, by what the server did with them.")
        lines.append("# TYPE recordkeeper_relay_operations_total counter")
        for kind in PushedOperationKind.allCases {
            lines.append("recordkeeper_relay_operations_total{result=\"\(kind.rawValue)\"} \(state.operations[kind.rawValue] ?? 0)")
        }
        lines.append("# HELP recordkeeper_relay_pull_pages_total Pull pages answered.")
        lines.append("# TYPE recordkeeper_relay_pull_pages_total counter")
        lines.append("recordkeeper_relay_pull_pages_total \(state.pullPages)")
        lines.append("# HELP recordkeeper_relay_pulled_changes_total Changes delivered by pulls.")
        lines.append("# TYPE recordkeeper_relay_pulled_changes_total counter")
        lines.append("recordkeeper_relay_pulled_changes_total \(state.pulledChanges)")
        lines.append("# HELP recordkeeper_relay_live_pulls_total Live pulls answered, by how they ended.")
        lines.append("# TYPE recordkeeper_relay_live_pulls_total counter")
        for end in LivePullEnd.allCases {
            lines.append("recordkeeper_relay_live_pulls_total{result=\"\(end.rawValue)\"} \(state.livePulls[end] ?? 0)")
        }
        lines.append("# HELP recordkeeper_relay_refused_total Requests refused before the database, by reason.")
        lines.append("# TYPE recordkeeper_relay_refused_total counter")
        for (reason, count) in state.refusals.sorted(by: { $0.key < $1.key }) {
            lines.append("recordkeeper_relay_refused_total{reason=\"\(reason)\"} \(count)")
        }
        for gauge in gauges {
            lines.append("# HELP \(gauge.name) \(gauge.help)")
            lines.append("# TYPE \(gauge.name) gauge")
            lines.append("\(gauge.name) \(gauge.value)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// What happened to one pushed operation, for the operations counter.
enum PushedOperationKind: String, CaseIterable, Sendable {
    case applied
    case conflict
    case outOfOrder = "out_of_order"
    case redelivered
}
