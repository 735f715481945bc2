import Foundation
import RecordKeeper
import RecordKeeperPostgres

/// The end-of-run checks, space by space, against the server's tables (read with SQL):
/// every device has exactly the server's records; every operation a device made was sent,
/// recorded once and answered consistently, and the space's counter moved once per applied
/// operation (exactly once, nothing lost); every same-key collision is a conflict reported on
/// exactly one side, and there is no other conflict.
struct LoadVerification {
    struct SpaceFigures: Sendable, Codable {
        var space: String
        var database: Int
        var devices: Int
        var operations: Int
        var applied: Int
        var conflicts: Int
        var records: Int
        /// Conflicts a device holds (syncConflicts()) that no SyncReport named: the sync that
        /// recorded them threw afterwards (its pull failed during a restart).
        var conflictsOnlyInStore: Int
    }

    var violations: [String] = []
    var spaces: [SpaceFigures] = []

    private struct ServerOperation {
        var device: String
        var applied: Int64?
        var conflict: Bool
    }

    static func check(_ outcome: LoadRun.Outcome, cluster: Cluster) async throws -> LoadVerification {
        var verification = LoadVerification()
        var connections: [PostgresConnection] = []
        for database in cluster.databases { connections.append(try await PostgresConnection(conninfo: database.conninfo)) }
        let bySpace = Dictionary(grouping: outcome.devices, by: \.space)
        for space in bySpace.keys.sorted(by: { $0.localizedStandardCompare($1) == .orderedAscending }) {
            try await verification.check(
                space, devices: bySpace[space]!, collisions: outcome.collisions.filter { $0.space == space },
                connections: connections)
        }
        // Errors other than unreachable, grouped by what they say (ports and spaces aside).
        var errors: [String: Int] = [:]
        for device in outcome.devices {
            for failure in device.state.withLock({ $0.failures }) {
                let general = failure.replacingOccurrences(of: #"127\.0\.0\.1:[0-9]+"#, with: "127.0.0.1:PORT", options: .regularExpression)
                    .replacingOccurrences(of: #"space load-[0-9]+"#, with: "space load-N", options: .regularExpression)
                errors[general, default: 0] += 1
            }
        }
        for (error, count) in errors.sorted(by: { $0.value > $1.value }) {
            verification.violations.append("\(count)× a device saw an error other than unreachable: \(error)")
        }
        return verification
    }

    private mutating func check(
        _ space: String, devices: [SimulatedDevice], collisions: [LoadRun.Collision], connections: [PostgresConnection]
    ) async throws {
        func fail(_ text: String) { violations.append("\(space): \(text)") }
        // Which database holds the space: exactly one.
        var holders: [(Int, Int64)] = []
        for (index, connection) in connections.enumerated() {
            let result = try await connection.execute(
                "SELECT counter FROM recordkeeper_sync_spaces WHERE space = $1", [.text(space)], operation: "read the counter")
            if result.rowCount == 1 { holders.append((index, try result.int64(0, 0))) }
        }
        guard holders.count == 1, let (database, counter) = holders.first else {
            fail("found on \(holders.count) databases, not one")
            return
        }
        let connection = connections[database]

        // The server's operations and records.
        let rows = try await connection.execute(
            "SELECT operation_id, device, version, outcome::text FROM recordkeeper_sync_operations WHERE space = $1",
            [.text(space)], operation: "read the operations")
        var server: [UUID: ServerOperation] = [:]
        for row in 0..<rows.rowCount {
            let id = try rows.uuid(row, 0)
            if server[id] != nil { fail("operation \(id) recorded twice") }
            let outcome = try rows.optionalString(row, 3) ?? ""
            server[id] = ServerOperation(device: try rows.string(row, 1), applied: try rows.optionalInt64(row, 2),
                                         conflict: outcome.contains("conflict"))
        }
        let records = try await connection.execute(
            "SELECT key, payload, deleted FROM recordkeeper_sync_records WHERE space = $1 AND collection = $2",
            [.text(space), .text(loadCollection)], operation: "read the records")
        var live: [String: Data] = [:]
        for row in 0..<records.rowCount where !(try records.bool(row, 2)) {
            live[try records.string(row, 0)] = try records.data(row, 1)
        }

        // Exactly once: one counter value per applied operation, each used once.
        let applied = server.values.compactMap(\.applied)
        if Int64(applied.count) != counter {
            fail("the counter is \(counter) but \(applied.count) operations were applied")
        }
        if Set(applied).count != applied.count { fail("two applied operations share a version") }

        // Every operation a device made reached the server once, with one consistent answer.
        var sent: [UUID: SentOperation] = [:]
        for device in devices {
            let operations = device.recorder.operations
            let transactions = device.state.withLock { $0.transactions }
            if operations.count != transactions {
                fail("\(device.name) made \(transactions) local transactions but sent \(operations.count) operations")
            }
            sent.merge(operations) { first, _ in first }
        }
        let missing = Set(sent.keys).subtracting(server.keys)
        let extra = Set(server.keys).subtracting(sent.keys)
        if !missing.isEmpty { fail("\(missing.count) operations sent are not on the server (lost), e.g. \(missing.first!)") }
        if !extra.isEmpty { fail("\(extra.count) operations on the server no device sent, e.g. \(extra.first!)") }
        for (id, operation) in sent {
            guard let recorded = server[id] else { continue }
            if operation.results.isEmpty { fail("operation \(id) of \(operation.device) was never answered") }
            for result in operation.results {
                let agrees: Bool
                switch result {
                case .applied(let version): agrees = recorded.applied == version.rawValue
                case .conflict: agrees = recorded.applied == nil && recorded.conflict
                default: agrees = false
                }
                if !agrees { fail("operation \(id) of \(operation.device) was answered \(result), unlike the server's record") }
            }
        }

        // Collisions: two devices' changes of one key on one base. Exactly one applies.
        var groups: [String: [UUID]] = [:]
        for (id, operation) in sent {
            for change in operation.changes { groups["\(change.key)@\(change.base.map(String.init) ?? "new")", default: []].append(id) }
        }
        var collided: [String: Set<String>] = [:]  // key → devices that lost
        var conflictsInCollisions = 0
        for (group, ids) in groups where Set(ids.map { sent[$0]!.device }).count > 1 {
            let key = String(group[..<group.lastIndex(of: "@")!])
            let winners = ids.filter { server[$0]?.applied != nil }
            let losers = ids.filter { server[$0]?.conflict == true }
            if winners.count != 1 || losers.count != ids.count - 1 {
                fail("collision on \(group): \(winners.count) applied and \(losers.count) conflicts among \(ids.count) writes")
            }
            conflictsInCollisions += losers.count
            collided[key, default: []].formUnion(losers.map { sent[$0]!.device })
        }
        let made = Set(collisions.map(\.key))
        if Set(collided.keys) != made {
            fail("\(made.count) collisions made but \(collided.count) found on the wire "
                + "(made, not found: \(made.subtracting(collided.keys).sorted().prefix(5)); found, not made: \(Set(collided.keys).subtracting(made).sorted().prefix(5)))")
        }
        let conflicts = server.values.filter(\.conflict).count
        if conflicts != conflictsInCollisions {
            fail("\(conflicts) conflicts on the server, \(conflictsInCollisions) of them in collisions")
        }

        // Every device: nothing pending, the server's records exactly, its own last writes,
        // and the conflicts it lost reported.
        var reportedTotal = 0
        var heldTotal = 0
        var unreportedTotal = 0
        for device in devices {
            guard let status = try await device.store.syncStatus() else {
                fail("\(device.name) has no sync status")
                continue
            }
            if status.pendingOperations != 0 { fail("\(device.name) still has \(status.pendingOperations) operations pending") }
            let local = try await device.store.read(loadCollection) ?? [:]
            if local != live {
                let differing = Set(local.keys).symmetricDifference(live.keys).union(local.keys.filter { live[$0] != nil && live[$0] != local[$0] })
                fail("\(device.name) differs from the server in \(differing.count) records, e.g. \(differing.sorted().prefix(3))")
            }
            for (key, value) in device.state.withLock({ $0.own }) where live[key] != value {
                fail("\(device.name)'s last write of its own key \(key) is not the server's value")
            }
            let lost = Set(collided.filter { $0.value.contains(status.device) }.keys)
            let held = Set(try await device.store.syncConflicts().map(\.key))
            let reported = Set(device.state.withLock { $0.reportedConflicts })
            reportedTotal += reported.count
            if held != lost { fail("\(device.name) holds conflicts on \(held.sorted().prefix(5)), lost collisions on \(lost.sorted().prefix(5))") }
            // A sync whose push recorded a conflict but whose pull then failed throws: its
            // report is lost, the conflict is still in the store (syncConflicts()), which is
            // where an app finds them. So: held must be exactly what was lost; reports only
            // never name what was not.
            if !reported.isSubset(of: lost) {
                fail("\(device.name) was reported conflicts on \(reported.subtracting(lost).sorted().prefix(5)), which it did not lose")
            }
            heldTotal += held.count
            unreportedTotal += lost.subtracting(reported).count
        }
        if heldTotal != conflictsInCollisions {
            fail("\(heldTotal) conflicts held by devices, \(conflictsInCollisions) collisions lost")
        }
        spaces.append(SpaceFigures(
            space: space, database: database + 1, devices: devices.count, operations: server.count, applied: applied.count,
            conflicts: conflicts, records: live.count, conflictsOnlyInStore: unreportedTotal))
    }
}
