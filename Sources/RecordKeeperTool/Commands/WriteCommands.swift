import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `put` and `delete`. With `--if-version` both are conditional writes
/// (`RecordStore.apply(_:changes:expecting:enqueue:)`): a record changed meanwhile is a conflict, exit 75.
enum WriteCommands {
    /// Stores VALUE (or standard input for `-`) exactly; `--json` stores the compact form of a
    /// JSON value, `--base64` the decoded bytes. Creates the store if needed.
    static func put(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let key = try context.name(1, "key")
        let argument = context.positional(2)
        let data = try payload(argument, context, command: "put")
        let store = try context.store.writableStore()
        let expected = try expectedVersion(context, allowAbsent: true)
        try await naming(collection, key) {
            if let expected {
                var changes = RecordChanges()
                changes[key] = data
                try await store.apply(collection, changes: changes, expecting: [key: expected])
            } else {
                try await store.put(collection, key: key, data: data)
            }
        }
        return .ok
    }

    /// The bytes a VALUE argument stands for (standard input for `-`), as `put` reads them:
    /// exactly, or with `--json` the compact form of a JSON value, with `--base64` the decoded
    /// bytes (ASCII whitespace in the base64 text, such as line breaks, is ignored).
    /// `resolve --merged` reads its value the same way.
    ///
    /// - Throws: ``UsageError`` for both flags; ``ToolError`` (65) for a value that is not what
    ///   the flag says.
    static func payload(_ argument: String, _ context: CommandContext, command: String) throws -> Data {
        let asJSON = context.arguments.has("json")
        let asBase64 = context.arguments.has("base64")
        if asJSON && asBase64 {
            throw UsageError(message: "give --json or --base64, not both", command: command)
        }
        let source = argument == "-" ? "standard input" : "VALUE"
        let bytes: [UInt8] = argument == "-"
            ? try ByteReader(standardInput: ()).readAll()
            : Array(argument.utf8)
        let data: Data
        if asJSON {
            let compact: [UInt8]
            switch JSONStream.compactValue(bytes) {
            case .success(let value): compact = value
            case .failure(let error):
                let position = bytes.withUnsafeBufferPointer { error.position(in: $0) }
                throw ToolError(.dataError, "\(source) is not valid JSON: line \(position.line), column \(position.column): "
                                + "\(error.reason); nothing was written")
            }
            guard PayloadCoding.acceptedByFoundation(compact) else {
                throw ToolError(.dataError, "\(source) is not valid JSON (JSONSerialization refused it); nothing was written")
            }
            data = Data(compact)
        } else if asBase64 {
            // Line-wrapped base64 (`base64` wraps at 76 characters) is accepted: ASCII whitespace
            // is dropped anywhere, then the rest is decoded strictly (any other character is
            // refused, unlike `.ignoreUnknownCharacters`).
            let text = String(decoding: bytes.filter { !isASCIIWhitespace($0) }, as: UTF8.self)
            guard let decoded = StrictBase64.decode(text) else {
                throw ToolError(.dataError, "\(source) is not valid base64; nothing was written")
            }
            data = decoded
        } else {
            data = Data(bytes)
        }
        return data
    }

    /// Space, tab, line feed, vertical tab, form feed and carriage return.
    private static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// Runs a write of the one record `key` of `collection`, so that its failure names both
    /// even when it happened before the record was reached (a lock held past the busy timeout
    /// at the transaction's start; opening aside, which concerns the whole store).
    @discardableResult
    private static func naming<T>(_ collection: String, _ key: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch var error as RecordStoreError where (error.key == nil || error.collection == nil) && error.operation != .open {
            if error.key == nil { error.key = key }
            if error.collection == nil { error.collection = collection }
            throw error
        }
    }

    /// `--if-version`: nil when not given; `.some(nil)` for `absent` (must not exist).
    private static func expectedVersion(
        _ context: CommandContext, allowAbsent: Bool
    ) throws(UsageError) -> RecordVersion?? {
        guard let text = context.arguments.values["if-version"] else { return nil }
        if allowAbsent && text == "absent" { return .some(nil) }
        guard let number = Int64(text), number >= 0 else {
            let expected = allowAbsent ? "a version number from 'list' or 'absent'" : "a version number from 'list'"
            throw UsageError(message: "--if-version needs \(expected)", command: context.arguments.command)
        }
        return .some(RecordVersion(number))
    }

    /// Removes one record (`RecordStore.delete`) and says whether there was one: deleting a
    /// record that is not stored succeeds and says so, like the library (exit 0, nothing
    /// written, no collection created). A missing store is exit 66; with `--if-version`, a
    /// record changed or gone is a conflict, exit 75.
    static func delete(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let key = try context.name(1, "key")
        let store = try context.store.existingStore()
        let expected = try expectedVersion(context, allowAbsent: false) ?? nil
        let removed = try await store.delete(collection, key: key, ifVersion: expected)
        context.written.set()
        if !context.quiet {
            let summary = removed
                ? "removed \(quoted(key)) from \(quoted(collection))"
                : "no record \(quoted(key)) in \(quoted(collection)); nothing was removed"
            try context.output.write(summary + "\n")
        }
        return .ok
    }
}
