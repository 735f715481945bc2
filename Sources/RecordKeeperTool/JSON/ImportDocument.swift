import Foundation

/// Receives what an import file contains, in file order.
protocol ImportVisitor: AnyObject {
    /// A collection is named (its object in JSON, a declaration or a first record in NDJSON).
    /// May be called more than once for the same name.
    func collection(_ name: String) throws
    func record(collection: String, key: String, payload: Data) throws
}

/// Reads an export in either format, streaming, and tells a visitor about it.
///
/// The format is detected from the first member of the first object: `"collections"` starts a
/// JSON export, anything else is an NDJSON record line. See docs/CLI.md for both formats.
enum ImportDocument {
    /// - Parameter foundationCheck: Whether each value is also checked with `JSONSerialization`;
    ///   false only for a second pass over input a first pass already checked.
    static func read(
        _ reader: ByteReader, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool = true
    ) throws {
        let json = JSONReader(reader)
        guard let first = try json.peekSignificant() else { return }  // An empty NDJSON export.
        let start = json.error("")
        guard first == UInt8(ascii: "{") else {
            throw json.error("expected '{': an export is a JSON object {\"collections\": ...} or NDJSON record lines")
        }
        reader.advance()
        guard try json.peekSignificant() == UInt8(ascii: "\"") else {
            throw json.error("expected \"collections\" (JSON export) or \"collection\" (NDJSON record line)")
        }
        let firstKey = try json.readString()
        try json.expect(UInt8(ascii: ":"), "':' after a key")
        if firstKey == "collections" {
            try readCollections(json, into: visitor, progress: progress, foundationCheck: foundationCheck)
            guard try json.peekSignificant() == UInt8(ascii: "}") else {
                throw json.error("expected '}' after \"collections\" (no other members are allowed)")
            }
            reader.advance()
            try json.skipWhitespace()
            guard try reader.peek() == nil else { throw json.error("unexpected content after the export object") }
        } else {
            var lastCollection: String?
            try readRecordLine(json, start: start, firstKey: firstKey, lastCollection: &lastCollection,
                               into: visitor, progress: progress, foundationCheck: foundationCheck)
            while true {
                try json.skipSpacesInLine()
                guard let next = try reader.peek() else { return }
                guard next == 0x0A else { throw json.error("expected a line break after a record line") }
                try json.skipWhitespace()
                guard try reader.peek() != nil else { return }
                let lineStart = json.error("")
                try readRecordLine(json, start: lineStart, firstKey: nil, lastCollection: &lastCollection,
                                   into: visitor, progress: progress, foundationCheck: foundationCheck)
            }
        }
    }

    /// `{"NAME": {"KEY": VALUE, ...}, ...}`
    private static func readCollections(
        _ json: JSONReader, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool
    ) throws {
        try json.readObject { name in
            guard !name.isEmpty else { throw json.error("a collection name is empty") }
            try visitor.collection(name)
            try json.readObject { key in
                try json.skipWhitespace()
                let position = json.error("")
                guard !key.isEmpty else { throw json.error("a key is empty") }
                var compact: [UInt8] = []
                try json.readValue(into: &compact)
                try visitor.record(collection: name, key: key,
                                   payload: try ImportValue.payload(compact, at: position, foundationCheck: foundationCheck))
                progress.advance()
            }
        }
    }

    /// `{"collection": NAME}` declares a collection; `{"collection": NAME, "key": KEY, "value": VALUE}`
    /// is a record. `"version"` is allowed and ignored.
    private static func readRecordLine(
        _ json: JSONReader, start: JSONSyntaxError, firstKey: String?, lastCollection: inout String?,
        into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool
    ) throws {
        var collection: String?
        var key: String?
        var payload: Data?
        let member: (String) throws -> Void = { name in
            switch name {
            case "collection": collection = try json.readString()
            case "key": key = try json.readString()
            case "value":
                try json.skipWhitespace()
                let position = json.error("")
                var compact: [UInt8] = []
                try json.readValue(into: &compact)
                payload = try ImportValue.payload(compact, at: position, foundationCheck: foundationCheck)
            case "version": try json.skipValue()
            default: throw json.error("unknown member \(quoted(name)); a record line has collection, key and value")
            }
        }
        if let firstKey {
            try json.readRestOfObject(firstKey: firstKey, member)
        } else {
            try json.readObject(member)
        }
        func failure(_ message: String) -> JSONSyntaxError {
            JSONSyntaxError(line: start.line, column: start.column, message: message)
        }
        guard let collection else { throw failure("a record line needs \"collection\"") }
        guard !collection.isEmpty else { throw failure("a collection name is empty") }
        if collection != lastCollection {
            try visitor.collection(collection)
            lastCollection = collection
        }
        switch (key, payload) {
        case (nil, nil):
            return
        case let (key?, payload?):
            guard !key.isEmpty else { throw failure("a key is empty") }
            try visitor.record(collection: collection, key: key, payload: payload)
            progress.advance()
        default:
            throw failure("a record line needs both \"key\" and \"value\"")
        }
    }
}
