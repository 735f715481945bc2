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
            changes = try parseChangeSet(JSONReader(reader))
        } catch let error as JSONSyntaxError {
            throw ToolError(.dataError, "\(reader.name): line \(error.line), column \(error.column): "
                            + "\(error.message); nothing was written")
        }
        let store = try context.store.writableStore()
        let applied = try await store.apply(collection, changes: changes)
        if !context.quiet {
            try context.output.write(summary(applied, collection: collection) + "\n")
        }
        return .ok
    }

    /// One line saying what the apply did, counted by the store inside its transaction (like
    /// `import`): keys to remove that were not stored count as "already absent", upserts of
    /// the payload already stored as "unchanged".
    static func summary(_ applied: AppliedChanges, collection: String) -> String {
        var line = "applied to \(quoted(collection)): added \(applied.added.count), changed \(applied.changed.count), "
            + "removed \(applied.removed.count), unchanged \(applied.unchanged.count), "
            + "already absent \(applied.notFound.count)"
        if applied.writtenCount == 0 { line += "; nothing was written" }
        return line
    }

    /// Reads a whole change set; every problem is a `JSONSyntaxError` with its position.
    static func parseChangeSet(_ json: JSONReader) throws -> RecordChanges {
        var changes = RecordChanges()
        var removals: [String: JSONSyntaxError] = [:]  // Key and where it was given.
        try json.readObject { member in
            switch member {
            case "upserts":
                try json.readObject { key in
                    try json.skipWhitespace()
                    let position = json.error("")
                    guard !key.isEmpty else { throw JSONSyntaxError(line: position.line, column: position.column,
                                                                    message: "a key in \"upserts\" is empty") }
                    var compact: [UInt8] = []
                    try json.readValue(into: &compact)
                    guard changes.upserts[key] == nil else {
                        throw JSONSyntaxError(line: position.line, column: position.column,
                                              message: "key \(quoted(key)) appears twice in \"upserts\"")
                    }
                    changes[key] = try ImportValue.payload(compact, at: position)
                }
            case "removals":
                try json.readArray {
                    try json.skipWhitespace()
                    let position = json.error("")
                    let key = try json.readString()
                    guard !key.isEmpty else {
                        throw JSONSyntaxError(line: position.line, column: position.column, message: "a key in \"removals\" is empty")
                    }
                    removals[key] = position
                }
            default:
                throw json.error("unknown member \(quoted(member)); a change set has \"upserts\" and \"removals\"")
            }
        }
        try json.skipWhitespace()
        guard try json.input.peek() == nil else { throw json.error("unexpected content after the change set") }
        for (key, position) in removals.sorted(by: { ($0.value.line, $0.value.column) < ($1.value.line, $1.value.column) }) {
            guard changes.upserts[key] == nil else {
                throw JSONSyntaxError(line: position.line, column: position.column,
                                      message: "key \(quoted(key)) is both upserted and removed")
            }
            changes[key] = nil
        }
        return changes
    }
}
