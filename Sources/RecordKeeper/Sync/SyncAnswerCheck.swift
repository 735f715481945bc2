import Foundation

/// Checks of what a server answers, against what the device knows, before anything of it is
/// applied: a server restored from an older backup, a row edited by hand, a bug or a lie must
/// end in a clear ``/RecordKeeperSync/SyncError`` (``/RecordKeeperSync/SyncError/Code/serverFailure``, naming the space, operation
/// or record), never in a crash, a silent drop or a device that diverges for ever.
enum SyncAnswerCheck {
    /// Versions and counters a server may give: a version is at least 1; neither may be
    /// `Int64.max`, which has no next value (a cursor there could never be pulled after).
    static let versions: ClosedRange<Int64> = 1...(Int64.max - 1)

    /// Checks a push's outcomes against the operations sent, and returns `chain` advanced by
    /// them: each operation the server recorded (applied or conflicting) becomes the device's
    /// last, each version it gave is seen.
    ///
    /// An outcome must belong to its operation (id, device, sequence: an id the server holds
    /// for another operation is not this one's); a new application must get a version above
    /// every version the device has seen (the server's counter never goes back); a conflict
    /// must name records of its operation, each at most once, with a server version in range
    /// and not below the base the device sent; after a refused operation, every later one of
    /// the chain must be refused too.
    static func outcomes(
        _ outcomes: [SyncOutcome], of operations: [SyncOperation], space: String, chain: SyncChain
    ) throws(SyncError) -> SyncChain {
        guard outcomes.count == operations.count else {
            throw SyncError(
                .serverFailure,
                "space \(space): the server answered \(operations.count) operations with \(outcomes.count) outcomes; "
                    + "nothing of the answer was applied")
        }
        var chain = chain
        var refused = false
        for (operation, outcome) in zip(operations, outcomes) {
            let which = "operation \(operation.id.uuidString) (sequence \(operation.sequence) of device \(operation.device))"
            func failure(_ problem: String) -> SyncError {
                SyncError(
                    .serverFailure,
                    "space \(space): the server's outcome of \(which) \(problem); nothing of the answer was applied and "
                        + "the operations stay pending")
            }
            guard outcome.operationID == operation.id else {
                throw failure("names another operation (\(outcome.operationID.uuidString))")
            }
            guard outcome.belongs(to: operation) else {
                throw failure(
                    "is the one it recorded for sequence \(outcome.sequence) of device \(outcome.device): it holds this "
                        + "operation id for another operation (recover() sends the operations again under new ids)")
            }
            if refused, !outcome.isRedelivery, outcome.result.appliedVersion != nil || !outcome.result.conflicts.isEmpty {
                throw failure("records it, although the server refused an operation before it in its chain")
            }
            switch outcome.result {
            case .applied(let version):
                guard versions.contains(version.rawValue) else {
                    throw failure("gives version \(version), out of range")
                }
                if !outcome.isRedelivery, version.rawValue <= chain.seen {
                    throw failure(
                        "gives version \(version), but this device has seen version \(chain.seen) already: the "
                            + "server's counter went back (was its database restored from an older backup?) and would "
                            + "give versions out again")
                }
                chain.saw(version.rawValue)
                chain.recorded(operation.id, sequence: operation.sequence)
            case .conflict(let conflicts):
                guard !conflicts.isEmpty else { throw failure("is a conflict without records") }
                try checkStates(
                    conflicts, of: operation, compacted: false, fromFirstDelivery: outcome.isRedelivery, chain: &chain,
                    failure: failure)
                chain.recorded(operation.id, sequence: operation.sequence)
            case .compacted(let current):
                // Received before, its outcome compacted: every record it changes is named, with
                // the server's current state of it.
                guard outcome.isRedelivery else { throw failure("says its outcome was compacted, but not that it was received before") }
                guard current.count == operation.changes.count else {
                    throw failure("names \(current.count) records for its compacted outcome, not the \(operation.changes.count) it changes")
                }
                // Built from the operation as sent now: it names exactly its records.
                try checkStates(
                    current, of: operation, compacted: true, fromFirstDelivery: false, chain: &chain, failure: failure)
                chain.recorded(operation.id, sequence: operation.sequence)
            case .outOfOrder(let last):
                guard (0...(Int64.max - 1)).contains(last) else {
                    throw failure("refuses it after sequence \(last), out of range")
                }
                // An operation of the chain refused: the server refuses every later one too.
                if operation.predecessor.isChecked { refused = true }
            }
        }
        return chain
    }

    /// Checks the records a conflict (or a compacted outcome) names against `operation`: records
    /// it changes, each once, with a server version in range and not below the base sent, and a
    /// server value whenever a base was sent, except for a compacted outcome, where a record
    /// the server no longer has was deleted and its tombstone compacted.
    ///
    /// A redelivered conflict (`fromFirstDelivery`) is the one the server recorded for the
    /// operation's first delivery, whose answer was lost: it may name a record the operation no longer changes
    /// (its change was dropped since, by keeping the server's value of a conflict), which is
    /// passed over, not refused, or the operation could never be answered.
    private static func checkStates(
        _ conflicts: [SyncConflict], of operation: SyncOperation, compacted: Bool, fromFirstDelivery: Bool,
        chain: inout SyncChain, failure: (String) -> SyncError
    ) throws(SyncError) {
        var named = Set<SyncRecordKey>()
        let sent = Dictionary(
            operation.changes.map { (SyncRecordKey(collection: $0.collection, key: $0.key), $0) },
            uniquingKeysWith: { first, _ in first })
        for conflict in conflicts {
            let record = SyncRecordKey(collection: conflict.collection, key: conflict.key)
            let name = "record \(RecordStoreError.quoted(conflict.collection))/\(RecordStoreError.quoted(conflict.key))"
            guard let change = sent[record] else {
                if fromFirstDelivery { continue }
                throw failure("is a conflict of \(name), which it does not change")
            }
            guard named.insert(record).inserted else { throw failure("names the conflict of \(name) twice") }
            if let server = conflict.server {
                guard versions.contains(server.version.rawValue) else {
                    throw failure("gives \(name) server version \(server.version), out of range")
                }
                if let base = change.base, server.version < base {
                    throw failure(
                        "gives \(name) server version \(server.version), below version \(base) this device "
                            + "had seen of it: the server went back")
                }
                chain.saw(server.version.rawValue)
            } else if let base = change.base, !compacted {
                throw failure(
                    "says the server never had \(name), which this device saw at version \(base): the server "
                        + "lost it")
            }
        }
    }

    /// Checks a page pulled after `after` against what the device has seen, before any of it
    /// is applied.
    ///
    /// Its cursor must not be behind `after`, a complete page's cursor (the server's counter)
    /// not below a version the device has seen, and a page cut short must end at its last
    /// change; its changes must come after `after`, in feed order, each at most once, with
    /// versions in range and up to the page's cursor, and, for a pull of some `collections`,
    /// of those collections only (a server that ignored the filter is caught here).
    static func page(
        _ page: SyncPage, after: SyncCursor, space: String, seen: Int64, collections: Set<String>? = nil
    ) throws(SyncError) {
        func failure(_ problem: String) -> SyncError {
            SyncError(
                .serverFailure,
                "space \(space): the server's page after cursor \(after) \(problem); nothing of the page was applied")
        }
        let cursor = page.cursor
        guard (0...(Int64.max - 1)).contains(cursor.counter) else {
            throw failure("ends at cursor \(cursor.counter), out of range")
        }
        if let position = cursor.position, position.collection.isEmpty || position.key.isEmpty {
            throw failure("ends at a cursor with an empty collection or key")
        }
        guard cursor >= after else {
            throw failure(
                "ends at \(cursor), behind it: the server's counter is below what this device has pulled (was its "
                    + "database restored from an older backup, or is it a replica that has not caught up?)")
        }
        if !page.hasMore, cursor.counter < seen {
            throw failure(
                "ends at the server's counter \(cursor.counter), below version \(seen) this device has seen: the server "
                    + "went back (was its database restored from an older backup?) and would give versions out again")
        }
        var previous = after
        for change in page.changes {
            let version = change.version.rawValue
            let name = "record \(RecordStoreError.quoted(change.collection))/\(RecordStoreError.quoted(change.key))"
            guard versions.contains(version) else { throw failure("gives \(name) version \(version), out of range") }
            if let collections, !collections.contains(change.collection) {
                throw failure("delivers \(name), of a collection the pull did not ask for")
            }
            let at = SyncCursor(
                counter: version, position: SyncCursor.Position(collection: change.collection, key: change.key))
            guard previous < at else {
                throw failure("delivers \(name) at version \(version) out of order (after \(previous))")
            }
            guard at <= cursor else { throw failure("delivers \(name) at version \(version), after its cursor \(cursor)") }
            previous = at
        }
        if page.hasMore, page.changes.isEmpty || previous != cursor {
            throw failure("is cut short but does not end at its last change (\(cursor))")
        }
    }
}
