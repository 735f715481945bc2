public import Foundation

/// One device's local transaction on synced collections, as it travels to the server.
///
/// The server applies all of its ``changes`` in one server transaction, or none of them, and
/// records its ``id`` in that same transaction: the id is the idempotency key, so sending an
/// operation again (after a timeout, a crash, a lost answer) never applies it twice.
///
/// ```swift
/// let operation = SyncOperation(
///     device: "phone-7F3A", sequence: 42,
///     changes: [SyncChange(collection: "notes", key: "today", value: .payload(data),
///                          base: SyncServerVersion(17))])
/// ```
public struct SyncOperation: Sendable, Hashable, Codable, Identifiable {
    /// The idempotency key, unique within a space.
    public var id: UUID
    /// The device (or process) that made the change; not empty. A device's operations are
    /// applied in ``sequence`` order.
    public var device: String
    /// The operation's place among its device's operations, increasing (gaps allowed). An
    /// operation whose sequence is not above the device's last recorded one is refused
    /// (``SyncResult/outOfOrder(lastSequence:)``).
    public var sequence: Int64
    /// The operation of the same device that this one follows, as the device knows it: the
    /// server refuses an operation whose predecessor is not the device's last recorded one
    /// (``SyncResult/outOfOrder(lastSequence:)``), so two copies of one store can never both
    /// write as one device. `RecordSync` always names it; ``SyncPredecessor/unchecked`` (the
    /// default) is for operations made by hand.
    public var predecessor: SyncPredecessor
    /// The records changed, at most one change per record; not empty.
    public var changes: [SyncChange]

    /// Creates an operation.
    public init(
        id: UUID = UUID(), device: String, sequence: Int64, predecessor: SyncPredecessor = .unchecked,
        changes: [SyncChange]
    ) {
        self.id = id
        self.device = device
        self.sequence = sequence
        self.predecessor = predecessor
        self.changes = changes
    }

    private enum CodingKeys: String, CodingKey {
        case id, device, sequence, predecessor, changes
    }

    /// Decodes an operation; one without `predecessor` (written before the chain existed) is
    /// ``SyncPredecessor/unchecked``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        device = try container.decode(String.self, forKey: .device)
        sequence = try container.decode(Int64.self, forKey: .sequence)
        predecessor = try container.decodeIfPresent(SyncPredecessor.self, forKey: .predecessor) ?? .unchecked
        changes = try container.decode([SyncChange].self, forKey: .changes)
    }
}

/// Which operation of its device a ``SyncOperation`` follows: the chain through which a
/// server tells one device's history from two copies of a store writing under one device id
/// (a backup, a copied file, a restore).
///
/// The server records every operation it receives (applied or conflicting) as the device's
/// last one. An operation naming another predecessor was not made by the store that sent the
/// last one: it is refused as ``SyncResult/outOfOrder(lastSequence:)``, nothing applied and
/// nothing recorded, and so is every later operation of that chain. The own-write rule of
/// ``SyncWritePolicy/compareAndSet`` applies only to operations with a checked predecessor.
///
/// ```swift
/// let first = SyncOperation(device: "phone-7F3A", sequence: 1, predecessor: .firstOfDevice, changes: changes)
/// let next = SyncOperation(device: "phone-7F3A", sequence: 2, predecessor: .operation(first.id), changes: more)
/// ```
public enum SyncPredecessor: Sendable, Hashable, Codable {
    /// Not checked: only the sequence rule applies, and the own-write rule does not.
    case unchecked
    /// The device's first operation: refused when the server has recorded any operation of
    /// the device.
    case firstOfDevice
    /// The operation the device knows as the last one the server recorded of it: refused when
    /// the server recorded another one last.
    case operation(UUID)

    /// Whether the server checks the chain (the own-write rule needs it).
    public var isChecked: Bool { self != .unchecked }
}

/// One record's new value within a ``SyncOperation``.
public struct SyncChange: Sendable, Hashable, Codable {
    /// The record's collection; not empty.
    public var collection: String
    /// The record's key; not empty.
    public var key: String
    /// The new payload, or a tombstone for a deletion.
    public var value: SyncValue
    /// The server version the device's value was based on: the version its last pull or
    /// acknowledgement showed for this record, or `nil` when the device has never seen the
    /// record on the server (a new record).
    public var base: SyncServerVersion?
    /// How the server decides whether the change may overwrite the record.
    public var policy: SyncWritePolicy
    /// The item version the payload was written at (a `RecordRepository`'s `itemVersion`, as
    /// the store records it for the collection), or `nil` for byte-level data of a collection
    /// no repository with item versions wrote. The server stores it with the record and
    /// returns it in pulls, and refuses a payload with a lower item version over a payload
    /// with a higher one (a conflict, whatever the policy): an older app never overwrites a
    /// newer shape.
    public var itemVersion: Int?

    /// Creates a change.
    public init(
        collection: String, key: String, value: SyncValue, base: SyncServerVersion?,
        policy: SyncWritePolicy = .compareAndSet, itemVersion: Int? = nil
    ) {
        self.collection = collection
        self.key = key
        self.value = value
        self.base = base
        self.policy = policy
        self.itemVersion = itemVersion
    }
}

/// A record's value in sync: its payload, or a tombstone saying it was deleted.
public enum SyncValue: Sendable, Hashable, Codable {
    /// The record's payload bytes.
    case payload(Data)
    /// The record was deleted. Tombstones travel through pulls like any change.
    case tombstone

    /// The payload, or `nil` for a tombstone.
    public var payload: Data? {
        if case .payload(let data) = self { return data }
        return nil
    }
}

/// How the server decides whether a change may overwrite the record it names.
public enum SyncWritePolicy: String, Sendable, Hashable, Codable {
    /// Applied only if the record is still at the change's ``SyncChange/base`` version
    /// (compare-and-set), or if the record's latest write came from the same device and was
    /// itself based on that version, and the operation's ``SyncOperation/predecessor`` is
    /// checked (the device builds on its own write, not yet acknowledged when it sent this
    /// one; the chain proves it is the same store). Otherwise the operation is a conflict.
    case compareAndSet
    /// Always applied: the later push wins, by the server's arrival order, never by device
    /// clocks. For collections whose app chose last-writer-wins.
    case lastWriterWins
}
