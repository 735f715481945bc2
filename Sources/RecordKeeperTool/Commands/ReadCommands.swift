import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `collections`, `list` and `get`: they read and never create a store.
enum ReadCommands {
    /// One tab-separated line per collection: name, records, payload bytes.
    static func collections(_ context: CommandContext) async throws -> ExitCode {
        let store = try context.store.existingStore()
        for summary in try await store.collections() {
            try context.output.write(
                "\(JSONText.displayName(summary.name))\t\(summary.recordCount)\t\(summary.payloadBytes)\n")
        }
        return .ok
    }

    /// One tab-separated line per record in key order: key, size, version[, value]. Streams
    /// from one snapshot, so a large collection is never loaded at once.
    static func list(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let withValues = context.arguments.has("values")
        let store = try context.store.existingStore()
        // The writer is not Sendable, so the snapshot body gets its own and flushes it.
        try context.output.flush()
        let found = try await store.snapshot { snapshot in
            let output = ByteWriter.standardOutput()
            let found = try snapshot.forEachRecord(in: collection) { record in
                var line = "\(JSONText.displayName(record.key))\t\(record.data.count)\t\(record.version.rawValue)"
                if withValues {
                    line += "\t" + String(decoding: PayloadCoding.text(for: record.data), as: UTF8.self)
                }
                try output.write(line + "\n")
            }
            try output.flush()
            return found
        }
        guard found else {
            throw ToolError(.notFound, "no collection \(quoted(collection)) in \(context.store.path)")
        }
        return .ok
    }

    /// The value: compact JSON, or `base64:...`; with `--raw` the bytes unchanged.
    static func get(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let key = try context.name(1, "key")
        let store = try context.store.existingStore()
        guard let data = try await store.value(collection, key: key) else {
            throw ToolError(.notFound, "no record \(quoted(key)) in collection \(quoted(collection))")
        }
        if context.arguments.has("raw") {
            try context.output.write(data)
        } else {
            try context.output.write(PayloadCoding.text(for: data))
            try context.output.write(byte: 0x0A)
        }
        return .ok
    }
}
