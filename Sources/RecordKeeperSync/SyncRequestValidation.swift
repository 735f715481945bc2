import Foundation

/// Checks of push and pull requests, shared by every server implementation, so bad input gets
/// the same clear error everywhere and nothing of the request is applied.
package enum SyncRequestValidation {
    package static func validatePush(space: String, operations: [SyncOperation]) throws(SyncError) {
        try validateName(space, "space")
        for operation in operations {
            // Messages are built only on failure (pushes carry many thousands of changes).
            let which = { "operation \(operation.id.uuidString)" }
            try validateName(operation.device, "device of \(which())")
            // Sequences count a device's operations from 1 (0 stands for "none" in a device's
            // last sequence), and the next of the largest one does not exist.
            if operation.sequence < 1 || operation.sequence == Int64.max {
                throw SyncError(
                    .invalidRequest,
                    "the sequence of \(which()) must be from 1 to \(Int64.max - 1), not \(operation.sequence)")
            }
            if operation.changes.isEmpty {
                throw SyncError(.invalidRequest, "\(which()) has no changes")
            }
            if operation.changes.count == 1 {
                try validateChange(operation.changes[0], which)
                continue
            }
            var seen = Set<SyncRecordKey>()
            for change in operation.changes {
                try validateChange(change, which)
                if !seen.insert(SyncRecordKey(collection: change.collection, key: change.key)).inserted {
                    throw SyncError(
                        .invalidRequest,
                        "\(which()) changes record \(change.collection)/\(change.key) more than once")
                }
            }
        }
    }

    /// A change names a record, and its base, when given, is a server version (from 1).
    private static func validateChange(_ change: SyncChange, _ which: () -> String) throws(SyncError) {
        try validateName(change.collection, "collection in \(which())")
        try validateName(change.key, "key in \(which()) (collection \(change.collection))")
        try requireNFC(change.collection, "collection in \(which())")
        try requireNFC(change.key, "key in \(which()) (collection \(change.collection))")
        if let base = change.base, base.rawValue < 1 {
            throw SyncError(
                .invalidRequest,
                "the base of \(change.collection)/\(change.key) in \(which()) must be a server version (from 1), "
                    + "not \(base.rawValue)")
        }
    }

    package static func validatePull(
        space: String, cursor: SyncCursor, limit: Int, collections: Set<String>? = nil
    ) throws(SyncError) {
        try validateName(space, "space")
        if limit < 1 || limit > SyncPage.maximumLimit {
            throw SyncError(
                .invalidRequest,
                "the pull limit must be between 1 and \(SyncPage.maximumLimit), not \(limit)")
        }
        if cursor.counter < 0 || cursor.counter == Int64.max {
            throw SyncError(.invalidRequest, "the cursor's counter is out of range (\(cursor.counter))")
        }
        if let position = cursor.position {
            try validateName(position.collection, "cursor collection")
            try validateName(position.key, "cursor key")
        }
        if let collections { try validateFilter(collections) }
    }

    /// A live pull's wait: from zero to ``SyncPage/maximumWait``.
    package static func validateWait(_ wait: Duration) throws(SyncError) {
        if wait < .zero || wait > SyncPage.maximumWait {
            throw SyncError(
                .invalidRequest, "a live pull waits from 0 to \(SyncPage.maximumWait), not \(wait)")
        }
    }

    /// The collections a pull names: at most ``SyncPullFilter/maximumCollections``, each a name.
    package static func validateFilter(_ collections: Set<String>) throws(SyncError) {
        if collections.count > SyncPullFilter.maximumCollections {
            throw SyncError(
                .invalidRequest,
                "a pull names at most \(SyncPullFilter.maximumCollections) collections, not \(collections.count)")
        }
        for collection in collections.sorted() {
            try validateName(collection, "collection of the pull")
            try requireNFC(collection, "collection of the pull")
        }
    }

    /// Collection names and keys are in Unicode Normalization Form C, as devices store and
    /// send them. The server compares bytes while Swift compares canonically equivalent
    /// strings as equal: a key in another form would be another record to the server and the
    /// same one to a push's own bookkeeping, and one of two such changes would be answered
    /// applied without being written. (Spaces are not checked: a store keeps sending the
    /// bytes of a space an earlier version recorded, docs/SYNC.md.)
    private static func requireNFC(_ value: String, _ what: @autoclosure () -> String) throws(SyncError) {
        var ascii = true
        for byte in value.utf8 where byte >= 0x80 {
            ascii = false
            break
        }
        if ascii || value.precomposedStringWithCanonicalMapping.utf8.elementsEqual(value.utf8) { return }
        throw SyncError(
            .invalidRequest,
            "the \(what()) is not in Unicode Normalization Form C (NFC), in which names are stored and compared")
    }

    /// Names are not empty and contain no NUL character (PostgreSQL's text cannot hold one).
    private static func validateName(_ value: String, _ what: @autoclosure () -> String) throws(SyncError) {
        if value.isEmpty { throw SyncError(.invalidRequest, "the \(what()) is empty") }
        if value.utf8.contains(0) {
            throw SyncError(.invalidRequest, "the \(what()) contains a NUL character")
        }
    }
}
