import Foundation
import HarnessSupport
import RecordKeeper

/// The load test: devices in spaces over relays A and B making random edits, deletes and
/// deliberate same-key collisions while they hold live pulls; relays and a database restarted
/// meanwhile; then quiescing and the checks of ``LoadVerification``.
struct LoadRun {
    let options: LoadTestOptions
    let cluster: Cluster

    /// A restart done during the run.
    struct Restart: Sendable, Codable {
        var what: String
        var atSeconds: Double
        var downSeconds: Double
    }

    /// A deliberate collision: two devices of a space wrote `key` with the same base.
    struct Collision: Sendable {
        var space: String
        var key: String
        var devices: [Int]
        /// The base both wrote on: nil for a key new to both.
        var existing: Bool
    }

    /// What the load phase produced, for the checks and the figures.
    struct Outcome: Sendable {
        var devices: [SimulatedDevice]
        var collisions: [Collision]
        var abandonedCollisions: Int
        var restarts: [Restart]
        var samples: [MonitorSample]
        var loadSeconds: Double
        var quiesceSeconds: Double
    }

    struct MonitorSample: Sendable {
        var holding: [Int]
        var heldGauge: [Double?]
        var rss: [Int]
        var threads: [Int]
    }

    func run() async throws -> Outcome {
        var made: [SimulatedDevice] = []
        for index in 0..<options.devices {
            let space = "load-\(index % options.spaces)"
            let relay = (index / options.spaces) % 2
            let client = try cluster.client(relay: relay, space: space)
            let device = SimulatedDevice(index: index, space: space, relay: relay) { client }
            try await device.start()
            made.append(device)
        }
        let devices = made
        say("recordkeeper-loadtest: \(devices.count) devices in \(options.spaces) spaces over relays A and B "
            + "(\(cluster.databases.count) database(s)), \(Int(options.duration)) s of load")
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started.advanced(by: .milliseconds(Int(options.duration * 1000)))
        let collisions = Locked([Collision]())
        let abandoned = Locked(0)
        let restarts = Locked([Restart]())
        let samples = Locked([MonitorSample]())
        let liveWait = Duration.milliseconds(Int(options.liveWait * 1000))

        // The sync and live pull loops run until stopped after the load; the rest end at the
        // deadline.
        let loops = Task {
            await withTaskGroup(of: Void.self) { group in
                for device in devices {
                    if options.continuous {
                        group.addTask { await device.continuousSync(pullWait: liveWait) }
                        continue
                    }
                    let seed = options.seed &+ UInt64(device.index) &* 7919
                    group.addTask { await device.syncLoop(seed: seed) }
                    group.addTask { await device.livePullLoop(wait: liveWait, seed: seed &+ 1) }
                }
            }
        }
        let failure = Locked<(any Error)?>(nil)
        await withTaskGroup(of: Void.self) { group in
            for device in devices {
                group.addTask {
                    do {
                        try await editLoop(device, until: deadline)
                    } catch {
                        failure.withLock { $0 = $0 ?? error }
                    }
                }
            }
            group.addTask {
                do {
                    try await collide(devices, until: deadline, into: collisions, abandoned: abandoned)
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
            group.addTask {
                do {
                    try await restartServers(started: started, into: restarts)
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
            group.addTask { await monitor(devices, until: deadline, into: samples) }
        }
        let loadSeconds = (clock.now - started).seconds
        if options.continuous { loops.cancel() }
        for device in devices { device.stop() }
        // One last edit in each space wakes the live pulls held there (on every relay), so
        // the loops end without cancelling a request (see SimulatedDevice.syncLoop).
        var random = SplitMix64(seed: options.seed &+ 0xE4D)
        for space in Set(devices.map(\.space)) {
            let device = devices.first { $0.space == space }!
            try await device.randomEdit(&random)
            do {
                _ = try await device.syncOnce()
            } catch {
                device.note(error, "the last edit's sync")
            }
        }
        await loops.value
        if let error = failure.withLock({ $0 }) { throw error }

        say("recordkeeper-loadtest: load over after \(String(format: "%.1f", loadSeconds)) s; quiescing")
        let quiesceStart = clock.now
        try await quiesce(devices)
        if options.fault == "unsynced-edit" {
            var random = SplitMix64(seed: 0xFA17)
            try await devices[0].randomEdit(&random)
        }
        return Outcome(
            devices: devices, collisions: collisions.withLock { $0 }, abandonedCollisions: abandoned.withLock { $0 },
            restarts: restarts.withLock { $0 }, samples: samples.withLock { $0 }, loadSeconds: loadSeconds,
            quiesceSeconds: (clock.now - quiesceStart).seconds)
    }

    // MARK: The load

    private func editLoop(_ device: SimulatedDevice, until deadline: ContinuousClock.Instant) async throws {
        var random = SplitMix64(seed: options.seed &+ UInt64(device.index) &* 104_729 &+ 1)
        let clock = ContinuousClock()
        while true {
            let pause = -log(1 - random.unit()) * options.editInterval
            let next = clock.now.advanced(by: .milliseconds(Int(pause * 1000)))
            if next >= deadline { return }
            try await clock.sleep(until: next)
            try await device.randomEdit(&random)
        }
    }

    /// Makes collisions: two devices of one space (one per relay), while neither syncs, write
    /// one key with the same base: a key new to both, or one both pulled at the same version.
    private func collide(
        _ devices: [SimulatedDevice], until deadline: ContinuousClock.Instant,
        into collisions: Locked<[Collision]>, abandoned: Locked<Int>
    ) async throws {
        guard options.collisionRate > 0 else { return }
        var random = SplitMix64(seed: options.seed &+ 0xC011)
        let clock = ContinuousClock()
        var number = 0
        // Several at once (each waits for its devices' sync rounds), never two on one device.
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            while true {
                let pause = -log(1 - random.unit()) / options.collisionRate
                let next = clock.now.advanced(by: .milliseconds(Int(pause * 1000)))
                if next >= deadline { break }
                try await clock.sleep(until: next)
                let space = "load-\(Int(random.next() % UInt64(options.spaces)))"
                let onA = devices.filter { $0.space == space && $0.relay == 0 }
                let onB = devices.filter { $0.space == space && $0.relay == 1 }
                let first = onA[Int(random.next() % UInt64(onA.count))]
                let second = onB[Int(random.next() % UInt64(onB.count))]
                number += 1
                let key = "c-\(number)"
                let existing = number % 2 == 0
                if running >= 8 {
                    try await group.next()
                    running -= 1
                }
                running += 1
                group.addTask {
                    // Lock order by index: a collision never waits for one holding the other's lock.
                    let ordered = [first, second].sorted { $0.index < $1.index }
                    await ordered[0].lock.acquire()
                    await ordered[1].lock.acquire()
                    let made: Bool
                    do {
                        made = try await collide(first, second, key: key, existing: existing)
                    } catch {
                        await ordered[1].lock.release()
                        await ordered[0].lock.release()
                        throw error
                    }
                    await ordered[1].lock.release()
                    await ordered[0].lock.release()
                    if made {
                        collisions.withLock {
                            $0.append(Collision(space: space, key: key, devices: [first.index, second.index], existing: existing))
                        }
                    } else {
                        abandoned.withLock { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// With both locks held. False when the set-up of an existing key could not reach the
    /// server (a restart): then only the first device wrote the key, and nothing collides.
    private func collide(_ first: SimulatedDevice, _ second: SimulatedDevice, key: String, existing: Bool) async throws -> Bool {
        if existing {
            let initial = Data("{\"collision\":\"\(key)\",\"by\":\(first.index),\"initial\":true}".utf8)
            try await first.write(key, initial)
            do {
                _ = try await first.syncHoldingLock()
                _ = try await second.syncHoldingLock()
            } catch {
                first.note(error, "collision set-up")
                return false
            }
            // Both must know the server's version of it: the first its push's answer, the
            // second its pull (the first's other edits may be pending meanwhile).
            let answered = first.recorder.operations.values.contains { operation in
                operation.changes.contains { $0.key == key } && operation.results.contains { $0.appliedVersion != nil }
            }
            guard answered, try await second.store.value(loadCollection, key: key) == initial else { return false }
        }
        try await first.write(key, Data("{\"collision\":\"\(key)\",\"by\":\(first.index)}".utf8))
        try await second.write(key, Data("{\"collision\":\"\(key)\",\"by\":\(second.index)}".utf8))
        return true
    }

    /// Full runs: relay A at 25 % of the load, database 1 at 45 % (when the load test owns it),
    /// relay B at 65 %. `--quick`-sized runs (under 10 s): relay A at 40 % only.
    private func restartServers(started: ContinuousClock.Instant, into restarts: Locked<[Restart]>) async throws {
        guard options.restarts else { return }
        let clock = ContinuousClock()
        var plan: [(Double, String)] = [(0.25, "relay A"), (0.45, "database 1"), (0.65, "relay B")]
        if options.duration < 10 { plan = [(0.4, "relay A")] }
        if cluster.databases[0].server == nil { plan.removeAll { $0.1.hasPrefix("database") } }
        for (fraction, what) in plan {
            try await clock.sleep(until: started.advanced(by: .milliseconds(Int(options.duration * fraction * 1000))))
            let begin = clock.now
            switch what {
            case "relay A": try await cluster.relays[0].restart()
            case "relay B": try await cluster.relays[1].restart()
            default:
                try await cluster.databases[0].server!.stop()
                // Down long enough for every device to see it (the load's own pacing).
                try await clock.sleep(for: .seconds(1))
                try await cluster.databases[0].server!.start()
            }
            let down = (clock.now - begin).seconds
            say("recordkeeper-loadtest: restarted \(what) at \(String(format: "%.1f", (begin - started).seconds)) s (\(String(format: "%.2f", down)) s)")
            restarts.withLock { $0.append(Restart(what: what, atSeconds: (begin - started).seconds, downSeconds: down)) }
        }
    }

    /// Once a second: live pulls held per relay (devices' side, and the relay's gauge when it
    /// has one), each relay's RSS and threads.
    private func monitor(_ devices: [SimulatedDevice], until deadline: ContinuousClock.Instant, into samples: Locked<[MonitorSample]>) async {
        let clock = ContinuousClock()
        while clock.now < deadline {
            var sample = MonitorSample(holding: [0, 0], heldGauge: [nil, nil], rss: [0, 0], threads: [0, 0])
            for device in devices where device.state.withLock({ $0.holding }) { sample.holding[device.relay] += 1 }
            for relay in 0..<2 {
                let gauges = await cluster.gauges(relay: relay)
                sample.heldGauge[relay] = gauges.first { $0.key.contains("held") || $0.key.contains("waiting_pulls") }?.value
                if let figures = cluster.relays[relay].sample() {
                    sample.rss[relay] = figures.rssBytes
                    sample.threads[relay] = figures.threads
                }
            }
            samples.withLock { $0.append(sample) }
            do {
                try await clock.sleep(for: .seconds(1))
            } catch {
                return
            }
        }
    }

    // MARK: Quiescing

    /// Every device syncs until nothing is pending (retrying while unreachable, for up to two
    /// minutes); then, once all have, each syncs once more, so every device has pulled every
    /// push.
    private func quiesce(_ devices: [SimulatedDevice]) async throws {
        let clock = ContinuousClock()
        let limit = clock.now.advanced(by: .seconds(120))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices {
                group.addTask {
                    var attempt = 0
                    while true {
                        do {
                            _ = try await device.syncOnce()
                            if try await device.store.syncStatus()?.pendingOperations == 0 { return }
                        } catch {
                            device.note(error, "quiescing sync")
                            guard clock.now < limit else {
                                throw LoadTestFailure("\(device.name) could not push everything within two minutes of quiescing: \(error)")
                            }
                            attempt += 1
                            try await clock.sleep(for: .milliseconds(min(50 * attempt, 500)))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices {
                group.addTask { _ = try await device.syncOnce() }
            }
            try await group.waitForAll()
        }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
