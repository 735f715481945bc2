import Foundation

/// The figures of a run, printed and (with `--json`) written as JSON.
struct LoadReport: Codable, Sendable {
    struct Relay: Codable, Sendable {
        var name: String
        var devices: Int
        /// Live pulls the devices of this relay held, as sampled once a second.
        var heldPullsMax: Int
        var heldPullsMean: Double
        /// The relay's own gauge of held pulls, when its /metrics has one.
        var heldPullsGaugeMax: Double?
        var rssMaxMB: Double
        var peakRSSMB: Double
        var threadsMax: Int
        var processes: Int
    }

    var date: String
    var loadAverage: String
    var build: String
    var devices: Int
    var spaces: Int
    var databases: Int
    var loadSeconds: Double
    var quiesceSeconds: Double
    var operations: Int
    var applied: Int
    var conflicts: Int
    var collisionsMade: Int
    var collisionsAbandoned: Int
    var conflictsOnlyInStore: Int
    var unreachableErrors: Int
    var livePulls: Int
    var operationsPerSecond: Double
    var operationsPerSecondPerSpace: [String: Double]
    var relays: [Relay]
    var restarts: [LoadRun.Restart]
    var violations: [String]
    var spaceFigures: [LoadVerification.SpaceFigures]

    init(_ outcome: LoadRun.Outcome, _ verification: LoadVerification, cluster: Cluster) {
        date = ISO8601DateFormatter().string(from: Date())
        loadAverage = LoadTestMachine.loadAverage
        #if DEBUG
            build = "debug"
        #else
            build = "release"
        #endif
        devices = outcome.devices.count
        spaces = verification.spaces.count
        databases = cluster.databases.count
        loadSeconds = outcome.loadSeconds
        quiesceSeconds = outcome.quiesceSeconds
        operations = verification.spaces.reduce(0) { $0 + $1.operations }
        applied = verification.spaces.reduce(0) { $0 + $1.applied }
        conflicts = verification.spaces.reduce(0) { $0 + $1.conflicts }
        collisionsMade = outcome.collisions.count
        collisionsAbandoned = outcome.abandonedCollisions
        conflictsOnlyInStore = verification.spaces.reduce(0) { $0 + $1.conflictsOnlyInStore }
        unreachableErrors = outcome.devices.reduce(0) { $0 + $1.recorder.unreachable.withLock { $0 } }
        livePulls = outcome.devices.reduce(0) { $0 + $1.state.withLock { $0.livePulls } }
        operationsPerSecond = Double(operations) / outcome.loadSeconds
        operationsPerSecondPerSpace = Dictionary(uniqueKeysWithValues: verification.spaces.map {
            ($0.space, Double($0.operations) / outcome.loadSeconds)
        })
        relays = (0..<2).map { index in
            let samples = outcome.samples
            let held = samples.map { $0.holding[index] }
            let peak = cluster.relays[index].peak
            return Relay(
                name: cluster.relays[index].name, devices: outcome.devices.filter { $0.relay == index }.count,
                heldPullsMax: held.max() ?? 0,
                heldPullsMean: held.isEmpty ? 0 : Double(held.reduce(0, +)) / Double(held.count),
                heldPullsGaugeMax: samples.compactMap { $0.heldGauge[index] }.max(),
                rssMaxMB: Double(peak.rssBytes) / 1_048_576, peakRSSMB: Double(peak.peakRSSBytes) / 1_048_576,
                threadsMax: peak.threads, processes: cluster.relays[index].starts)
        }
        restarts = outcome.restarts
        violations = verification.violations
        spaceFigures = verification.spaces
    }

    var text: String {
        func f(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        let perSpace = operationsPerSecondPerSpace.values.sorted()
        var lines = [
            "recordkeeper-loadtest (\(build) build) \(date), load average \(loadAverage)",
            "  \(devices) devices in \(spaces) spaces, relays A and B over \(databases) database(s); "
                + "\(f(loadSeconds)) s of load, \(f(quiesceSeconds)) s to quiesce",
            "  spaces per database: " + (1...max(databases, 1)).map { database in
                "database \(database) \(spaceFigures.filter { $0.database == database }.count)"
            }.joined(separator: ", "),
            "  operations: \(operations) (\(applied) applied, \(conflicts) conflicts); \(f(operationsPerSecond)) per second overall, "
                + "per space min \(f(perSpace.first ?? 0)) / median \(f(perSpace.isEmpty ? 0 : perSpace[perSpace.count / 2])) / max \(f(perSpace.last ?? 0))",
            "  collisions made: \(collisionsMade) (\(collisionsAbandoned) abandoned at set-up during a restart; "
                + "\(conflictsOnlyInStore) of the conflicts held by the store but named by no SyncReport, the sync having thrown after); "
                + "unreachable answers seen by devices: \(unreachableErrors); live pulls made: \(livePulls)",
        ]
        for relay in relays {
            lines.append(
                "  relay \(relay.name): \(relay.devices) devices, live pulls held max \(relay.heldPullsMax) / mean \(f(relay.heldPullsMean)) "
                    + "(relay gauge: \(relay.heldPullsGaugeMax.map { f($0, 0) } ?? "none in /metrics")), "
                    + "RSS max \(f(relay.rssMaxMB)) MB (VmHWM \(f(relay.peakRSSMB)) MB), threads max \(relay.threadsMax), processes \(relay.processes)")
        }
        lines.append("  restarts: " + (restarts.isEmpty ? "none" : restarts.map { "\($0.what) at \(f($0.atSeconds)) s (\(f($0.downSeconds, 2)) s)" }.joined(separator: ", ")))
        if violations.isEmpty {
            lines.append("  checks: every device of every space has the server's records; every operation recorded once and "
                + "answered consistently, counters match; every collision one applied + one reported conflict: OK")
        } else {
            lines.append("  VIOLATIONS (\(violations.count)):")
            lines += violations.prefix(50).map { "    " + $0 }
        }
        return lines.joined(separator: "\n")
    }
}
