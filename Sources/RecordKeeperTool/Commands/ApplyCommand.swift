import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `apply COLLECTION FILE|-`: a JSON change set applied as one transaction.
///
/// The change set is `{"upserts": {"KEY": VALUE, ...}, "removals": ["KEY", ...]}` (both
/// members optional). It is read and checked completely before the store is touched. The
/// summary reports what the store did, not what the change set asked for.
enum ApplyCommand {
    static func run(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let file = context.positional(1)
        let reader = file == "-" ? ByteReader(standardInput: ()) : try ByteReader(path: file)
        let changes: RecordChanges
        do {
            changes = try parseChangeSet(JSONStream(reader))
        } catch let error as JSONInputError {
            throw ToolError(.dataError, "\(reader.name): line \(error.line), column \(error.column): "
                            + "\(error.message); nothing was written")
        }
        let store = try context.store.writableStore()
        let applied = try await store.apply(collection, changes: changes)
        context.written.set()
        if !context.quiet {
            try context.output.write(summary(applied, collection: collection, emptyChangeSet: changes.isEmpty) + "\n")
        }
        return .ok
    }

    /// One line saying what the apply did, counted by the store inside its transaction (like
    /// `import`): keys to remove that were not stored count as "already absent", upserts of
    /// the payload already stored as "unchanged". An empty change set establishes the collection
    /// (as `RecordStore.apply` does) and writes no record, which the line says.
    static func summary(_ applied: AppliedChanges, collection: String, emptyChangeSet: Bool = false) -> String {
        var line = "applied to \(quoted(collection)): added \(applied.added.count), changed \(applied.changed.count), "
            + "removed \(applied.removed.count), unchanged \(applied.unchanged.count), "
            + "already absent \(applied.notFound.count)"
        if emptyChangeSet {
            line += "; the change set is empty: no record was written, and the collection is established"
        } else if applied.writtenCount == 0 {
            line += "; nothing was written"
        }
        return line
    }

    /// Reads a whole change set; every problem is a `JSONInputError` with its position.
    static func parseChangeSet(_ json: JSONStream) throws -> RecordChanges {
        var changes = RecordChanges()
        var removals: [String: JSONTextPosition] = [:]  // Key and where it was given.
        var members: Set<String> = []
        try json.readObject { member in
            // A member given twice would merge two lists a person meant as one (or a typo).
            guard members.insert(member).inserted else {
                throw json.error("\(quoted(member)) appears twice in the change set; give each list once")
            }
            switch member {
            case "upserts":
                try json.readObject { key in
                    try json.skipWhitespace()
                    let mark = json.mark
                    guard !key.isEmpty else { throw json.error("a key in \"upserts\" is empty") }
                    let compact = try json.readCompactValue()
                    guard changes.upserts[key] == nil else {
                        throw json.error("key \(quoted(key)) appears twice in \"upserts\"", at: mark)
                    }
                    changes[key] = try ImportValue.payload(compact, at: mark, in: json)
                }
            case "removals":
                try json.readArray {
                    try json.skipWhitespace()
                    let position = json.textPosition(of: json.mark)
                    let key = try json.readString()
                    guard !key.isEmpty else { throw JSONInputError("a key in \"removals\" is empty", at: position) }
                    removals[key] = position
                }
            default:
                throw json.error("unknown member \(quoted(member)); a change set has \"upserts\" and \"removals\"")
            }
        }
        guard try json.peekSignificant() == nil else { throw json.error("unexpected content after the change set") }
        for (key, position) in removals.sorted(by: { ($0.value.line, $0.value.column) < ($1.value.line, $1.value.column) }) {
            guard changes.upserts[key] == nil else {
                throw JSONInputError("key \(quoted(key)) is both upserted and removed", at: position)
            }
            changes[key] = nil
        }
        return changes
    }
}
