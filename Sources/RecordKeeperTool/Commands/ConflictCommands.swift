import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `conflicts [--json]` and `resolve COLLECTION KEY --keep local|server | --merged VALUE`: the sync conflicts a
/// store keeps until they are resolved. Neither needs the server.
enum ConflictCommands {
    /// The unresolved conflicts, one per line (or one JSON document). Reads, never writes, and
    /// never creates a store.
    ///
    /// Text: `collection<TAB>key<TAB>server version<TAB>local value<TAB>server value`, values as
    /// `get` prints them, `(deleted)` for a side that deleted the record.
    static func list(_ context: CommandContext) async throws -> ExitCode {
        let store = try context.store.existingStore()
        let conflicts = try await store.syncConflicts()
        if context.arguments.has("json") {
            try context.output.write(json(conflicts))
            return .ok
        }
        for conflict in conflicts {
            var line = "\(JSONText.displayName(conflict.collection))\t\(JSONText.displayName(conflict.key))\t"
            line += conflict.serverVersion.map { String($0.rawValue) } ?? "-"
            try context.output.write(line + "\t")
            try context.output.write(text(conflict.local))
            try context.output.write(byte: 0x09)
            try context.output.write(text(conflict.server))
            try context.output.write(byte: 0x0A)
        }
        return .ok
    }

    private static func text(_ value: Data?) -> [UInt8] {
        guard let value else { return Array("(deleted)".utf8) }
        return PayloadCoding.text(for: value)
    }

    /// `{"conflicts": [{"collection", "key", "serverVersion", "local", "server"}]}`: each side is
    /// `{"value": VALUE}` (VALUE as in exports: JSON, or `{"$base64": "..."}`) or
    /// `{"deleted": true}`, so a deleted record and a JSON `null` payload stay apart.
    static func json(_ conflicts: [SyncRecordConflict]) -> [UInt8] {
        var out = Array(#"{"conflicts":["#.utf8)
        for (index, conflict) in conflicts.enumerated() {
            out += Array((index == 0 ? "\n" : ",\n").utf8)
            out += object(conflict)
        }
        out += Array((conflicts.isEmpty ? "]}\n" : "\n]}\n").utf8)
        return out
    }

    /// One conflict as `{"collection", "key", "serverVersion", "local", "server"}` (see
    /// ``json(_:)``); `sync --json` lists its new conflicts the same way.
    static func object(_ conflict: SyncRecordConflict) -> [UInt8] {
        var out = Array(#"{"collection":"#.utf8) + JSONText.quoted(conflict.collection)
        out += Array(#","key":"#.utf8) + JSONText.quoted(conflict.key)
        out += Array(#","serverVersion":"#.utf8)
        out += Array((conflict.serverVersion.map { String($0.rawValue) } ?? "null").utf8)
        out += Array(#","local":"#.utf8) + side(conflict.local)
        out += Array(#","server":"#.utf8) + side(conflict.server)
        out += Array("}".utf8)
        return out
    }

    private static func side(_ value: Data?) -> [UInt8] {
        guard let value else { return Array(#"{"deleted":true}"#.utf8) }
        return Array(#"{"value":"#.utf8) + PayloadCoding.exportJSON(for: value) + Array("}".utf8)
    }

    /// Resolves one conflict: `--keep server` drops it (the record already has the server's
    /// value); `--keep local` writes the device's value back (or removes the record, if the
    /// device had deleted it), to be pushed by the next sync based on the server's version;
    /// `--merged VALUE` writes VALUE (read as `put` reads it: `-` for standard input, `--json`,
    /// `--base64`) the same way. Nothing is written when the value is refused.
    static func resolve(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let key = try context.name(1, "key")
        if context.arguments.values["merged"] == nil, context.arguments.has("json") || context.arguments.has("base64") {
            throw UsageError(message: "--json and --base64 describe the value of --merged", command: "resolve")
        }
        let resolution: SyncResolution
        switch (context.arguments.values["keep"], context.arguments.values["merged"]) {
        case ("local", nil): resolution = .local
        case ("server", nil): resolution = .server
        case (nil, let merged?): resolution = .merged(try WriteCommands.payload(merged, context, command: "resolve"))
        case (nil, nil):
            throw UsageError(
                message: "resolve needs --keep local, --keep server or --merged VALUE", command: "resolve")
        case (_?, _?): throw UsageError(message: "give --keep or --merged, not both", command: "resolve")
        case (let other?, nil):
            throw UsageError(message: "--keep takes local or server, not \(quoted(other))", command: "resolve")
        }

        let store = try context.store.existingStore()
        // Named plainly when there is no such conflict (the library refuses it too, should it
        // be resolved meanwhile by another process).
        let conflicts = try await store.syncConflicts()
        guard conflicts.contains(where: { $0.collection == collection && $0.key == key }) else {
            throw ToolError(.notFound, "no sync conflict for key \(quoted(key)) in collection \(quoted(collection)) "
                            + "(see 'recordkeeper conflicts'); nothing was changed")
        }
        try await store.resolveSyncConflict(collection, key: key, keeping: resolution)
        context.written.set()
        if !context.quiet {
            let what =
                switch resolution {
                case .local: "kept the local value; the next sync pushes it"
                case .server: "kept the server's value"
                case .merged: "wrote the merged value; the next sync pushes it"
                }
            try context.output.write("resolved \(quoted(collection)) \(quoted(key)): \(what)\n")
        }
        return .ok
    }
}
