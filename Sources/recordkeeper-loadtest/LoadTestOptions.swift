import Foundation
import RecordKeeperCommandLine

/// The command line of `recordkeeper-loadtest`.
struct LoadTestOptions: Sendable {
    enum Mode: String, Sendable { case run, latency }

    var mode = Mode.run
    var devices = 200
    var spaces = 20
    /// Seconds of load (edits and restarts); quiescing and checking come after.
    var duration = 60.0
    /// Mean seconds between one device's edits.
    var editInterval = 2.0
    /// Deliberate same-key collisions per second, over all spaces.
    var collisionRate = 2.0
    var restarts = true
    /// Latency samples (mode `latency`).
    var samples = 300
    /// Own PostgreSQL servers to start (when no `--database` is given).
    var ownDatabases = 2
    /// External databases (conninfo), never restarted.
    var databases: [String] = []
    var relayExecutable: String?
    /// Extra arguments of every relay's `serve` (`--relay-arg=--live-wake --relay-arg=listen`).
    var relayArguments: [String] = []
    var postgresBin: String?
    var json: String?
    var seed: UInt64 = 1
    var keep = false
    var liveWait = 20.0
    /// Each relay's `--pool` (query connections per database).
    var pool = 4
    /// A fault to make on purpose, to see the checks catch it (`unsynced-edit`: one device
    /// writes after quiescing and never syncs it).
    var fault: String?
    /// Devices keep in sync with `RecordSync.keepInSync()` instead of the load test's loops.
    var continuous = false

    static let specs: [OptionSpec] = [
        .flag("help", short: "h", help: "show this help"),
        .flag("quick", help: "CI size: 6 devices in 2 spaces for 4 s, one relay restart (latency: 30 samples)"),
        .value("devices", "N", help: "simulated devices (default 200), spread over the spaces and both relays"),
        .value("spaces", "N", help: "spaces (default 20)"),
        .value("duration", "SECONDS", help: "seconds of load before quiescing (default 60)"),
        .value("edit-interval", "SECONDS", help: "mean seconds between one device's edits (default 2)"),
        .value("collisions", "PER_SECOND", help: "deliberate same-key collisions per second (default 2)"),
        .flag("no-restarts", help: "restart neither relays nor the database"),
        .value("samples", "N", help: "latency: pushes timed (default 300)"),
        .value("databases", "N", help: "own PostgreSQL servers to start, spaces spread over them by a shard map (default 2)"),
        .value("database", "CONNINFO", repeats: true, help: "use this database instead (repeatable; never restarted)"),
        .value("relay", "PATH", help: "the recordkeeper-relay executable (default: beside this one)"),
        .value("relay-arg", "ARG", repeats: true, help: "one more argument of each relay's serve (repeatable; --relay-arg=--live-wake)"),
        .value("postgres-bin", "DIR", help: "where initdb and pg_ctl are (default: PATH, /usr/lib/postgresql/*/bin)"),
        .value("json", "FILE", help: "also write the figures as JSON (- for standard output)"),
        .value("seed", "N", help: "random seed (default 1)"),
        .value("pool", "N", help: "each relay's query connections per database (default 4)"),
        .value("live-wait", "SECONDS", help: "the wait of each live pull (default 20)"),
        .value("fault", "KIND", help: "make a fault the checks must catch: unsynced-edit (exits 1)"),
        .flag("continuous", help: "devices run RecordSync.keepInSync() (continuous sync) instead of the load test's own loops"),
        .flag("keep", help: "keep the scratch directory (logs, database files)"),
    ]

    static let commands = [
        CommandSpec(name: "run", arguments: [], options: [], summary: "the load test (default)", discussion: ""),
        CommandSpec(name: "latency", arguments: [], options: [], summary: "push on relay B → live pull on relay A", discussion: ""),
    ]

    static var help: String {
        (["usage: recordkeeper-loadtest [run|latency] [options]", "",
          "run: simulated devices in spaces over two relays, with restarts; checks convergence, exactly-once and conflicts.",
          "latency: p50/p99 from a push through relay B to the page of a live pull held on relay A.", ""]
            + HelpText.optionLines(specs)).joined(separator: "\n")
    }

    static func parse(_ arguments: [String]) throws -> LoadTestOptions {
        let parsed = try ArgumentParser.parse(arguments, globalOptions: specs, commands: commands)
        var options = LoadTestOptions()
        if parsed.wantsHelp { throw UsageError(message: help, command: nil) }
        options.mode = parsed.command.flatMap(Mode.init(rawValue:)) ?? .run
        if parsed.has("quick") {
            options.devices = 6
            options.spaces = 2
            options.duration = 4
            options.editInterval = 0.5
            options.collisionRate = 2
            options.samples = 30
        }
        func number(_ name: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let text = parsed.values[name] else { return nil }
            guard let value = Double(text), range.contains(value) else {
                throw UsageError(message: "--\(name) takes a number in \(range.lowerBound)...\(range.upperBound), not '\(text)'", command: nil)
            }
            return value
        }
        if let value = try number("devices", 2...100_000) { options.devices = Int(value) }
        if let value = try number("spaces", 1...10_000) { options.spaces = Int(value) }
        if let value = try number("duration", 1...3600) { options.duration = value }
        if let value = try number("edit-interval", 0.001...3600) { options.editInterval = value }
        if let value = try number("collisions", 0...10_000) { options.collisionRate = value }
        if let value = try number("samples", 1...1_000_000) { options.samples = Int(value) }
        if let value = try number("databases", 1...2) { options.ownDatabases = Int(value) }
        if let value = try number("seed", 0...1e15) { options.seed = UInt64(value) }
        if let value = try number("live-wait", 1...300) { options.liveWait = value }
        if let value = try number("pool", 1...1000) { options.pool = Int(value) }
        options.restarts = !parsed.has("no-restarts")
        options.databases = parsed.allValues["database"] ?? []
        options.relayExecutable = parsed.values["relay"]
        options.relayArguments = parsed.allValues["relay-arg"] ?? []
        options.postgresBin = parsed.values["postgres-bin"]
        options.json = parsed.values["json"]
        options.keep = parsed.has("keep")
        options.fault = parsed.values["fault"]
        options.continuous = parsed.has("continuous")
        if let fault = options.fault, fault != "unsynced-edit" {
            throw UsageError(message: "--fault takes unsynced-edit, not '\(fault)'", command: nil)
        }
        guard options.devices >= 2 * options.spaces else {
            throw UsageError(message: "--devices must be at least twice --spaces (two devices per space, one per relay)", command: nil)
        }
        return options
    }
}
