public import Foundation

/// The server's answer to one pushed ``SyncOperation``.
///
/// It names the operation it belongs to as the server recorded it: its id, device and
/// sequence. A client checks them against the operation it sent: an outcome recorded for
/// another device or sequence under the same id is not this operation's (`RecordSync` throws
/// ``SyncError/Code/serverFailure`` and keeps the operation pending).
public struct SyncOutcome: Sendable, Hashable, Codable {
    /// The operation answered.
    public var operationID: UUID
    /// The device of the operation the server recorded under ``operationID`` (for a new or
    /// refused operation, the one pushed).
    public var device: String
    /// The sequence of that operation.
    public var sequence: Int64
    /// What the server did with it.
    public var result: SyncResult
    /// `true` when the operation had been received before and this is the outcome it got then
    /// (the operation had no second effect).
    public var isRedelivery: Bool

    /// Creates an outcome.
    public init(operationID: UUID, device: String, sequence: Int64, result: SyncResult, isRedelivery: Bool = false) {
        self.operationID = operationID
        self.device = device
        self.sequence = sequence
        self.result = result
        self.isRedelivery = isRedelivery
    }

    /// The outcome of `operation`.
    public init(_ operation: SyncOperation, result: SyncResult, isRedelivery: Bool = false) {
        self.init(
            operationID: operation.id, device: operation.device, sequence: operation.sequence, result: result,
            isRedelivery: isRedelivery)
    }

    /// Whether this outcome belongs to `operation`: the same id, device and sequence.
    public func belongs(to operation: SyncOperation) -> Bool {
        operationID == operation.id && device == operation.device && sequence == operation.sequence
    }
}

/// What the server did with one operation.
public enum SyncResult: Sendable, Hashable, Codable {
    /// Every change was applied; each of its records now has this server version, which is
    /// also the space's change counter after the operation (a pull whose cursor reached it has
    /// seen the operation).
    case applied(SyncServerVersion)
    /// Nothing was applied: these records were not at the version the operation's changes were
    /// based on. Each conflict carries the server's current value and version; the operation's
    /// other changes were not applied either (an operation is whole or nothing).
    case conflict([SyncConflict])
    /// Nothing was applied and nothing recorded: the device already had an operation with this
    /// or a later sequence recorded (`lastSequence`, 0 when none), or the operation's
    /// ``SyncOperation/predecessor`` is not the device's last recorded operation (another copy
    /// of the store wrote as this device, or the server lost operations). Per-device order is
    /// never broken.
    case outOfOrder(lastSequence: Int64)
    /// Nothing was applied now: the server received this operation before its compaction
    /// horizon and has since deleted its outcome (the device's sequence says it was received),
    /// so whether it applied or conflicted then is forgotten; it is never applied twice. Each
    /// element names one record the operation changes with the server's current value and
    /// version (`server` `nil`: the server no longer has the record, it was deleted and its
    /// tombstone compacted). The device takes these like a conflict's server side: a record
    /// whose local value equals the server's is settled, another one becomes a reported
    /// conflict, both values kept (docs/SYNC.md "Exactly once across compaction").
    case compacted([SyncConflict])

    /// The version of an applied operation, `nil` otherwise.
    public var appliedVersion: SyncServerVersion? {
        if case .applied(let version) = self { return version }
        return nil
    }

    /// The conflicts of a conflicting operation, empty otherwise.
    public var conflicts: [SyncConflict] {
        if case .conflict(let conflicts) = self { return conflicts }
        return []
    }
}

/// One record whose server version was not the one a pushed change was based on.
public struct SyncConflict: Sendable, Hashable, Codable {
    /// The record's collection.
    public var collection: String
    /// The record's key.
    public var key: String
    /// The version the pushed change was based on.
    public var base: SyncServerVersion?
    /// The server's current value and version of the record; `nil` if the server has never
    /// had it.
    public var server: SyncRecordState?

    /// Creates a conflict.
    public init(collection: String, key: String, base: SyncServerVersion?, server: SyncRecordState?) {
        self.collection = collection
        self.key = key
        self.base = base
        self.server = server
    }
}

/// A record's value and version on the server.
public struct SyncRecordState: Sendable, Hashable, Codable {
    /// The payload, or a tombstone if it was deleted.
    public var value: SyncValue
    /// Its server version.
    public var version: SyncServerVersion
    /// The item version its payload was written at (``SyncChange/itemVersion``), `nil` when
    /// none is known.
    public var itemVersion: Int?

    /// Creates a record state.
    public init(value: SyncValue, version: SyncServerVersion, itemVersion: Int? = nil) {
        self.value = value
        self.version = version
        self.itemVersion = itemVersion
    }
}
