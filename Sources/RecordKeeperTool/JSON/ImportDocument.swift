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
///
/// A JSON export is read record by record (its collections and their objects walked by
/// `JSONStream`, each value parsed whole on the codec's tape), an NDJSON export line by line
/// (each line parsed whole), so memory stays at the largest record whatever the file's size.
enum ImportDocument {
    /// - Parameter foundationCheck: Whether each value is also checked with `JSONSerialization`;
    ///   false only for a second pass over input a first pass already checked.
    static func read(
        _ reader: ByteReader, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool = true
    ) throws {
        let json = JSONStream(reader)
        try read(json, into: visitor, progress: progress, foundationCheck: foundationCheck)
    }

    static func read(
        _ json: JSONStream, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool = true
    ) throws {
        try json.skipByteOrderMark()
        guard let first = try json.peekSignificant() else { return }  // An empty NDJSON export.
        guard first == UInt8(ascii: "{") else {
            throw json.error("expected '{': an export is a JSON object {\"collections\": ...} or NDJSON record lines")
        }
        let firstKey = try json.lookingAhead {
            json.advance()
            guard try json.peekSignificant() == UInt8(ascii: "\"") else {
                throw json.error("expected \"collections\" (JSON export) or \"collection\" (NDJSON record line)")
            }
            return try json.readString()
        }
        guard firstKey == "collections" else {
            try readRecordLines(json, into: visitor, progress: progress, foundationCheck: foundationCheck)
            return
        }
        json.advance()  // '{'
        _ = try json.readString()
        try json.expect(UInt8(ascii: ":"), "':' after a key")
        try readCollections(json, into: visitor, progress: progress, foundationCheck: foundationCheck)
        guard try json.peekSignificant() == UInt8(ascii: "}") else {
            throw json.error("expected '}' after \"collections\" (no other members are allowed)")
        }
        json.advance()
        guard try json.peekSignificant() == nil else { throw json.error("unexpected content after the export object") }
    }

    /// `{"NAME": {"KEY": VALUE, ...}, ...}`
    private static func readCollections(
        _ json: JSONStream, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool
    ) throws {
        try json.readObject { name in
            guard !name.isEmpty else { throw json.error("a collection name is empty") }
            try visitor.collection(name)
            try json.readObject { key in
                try json.skipWhitespace()
                let mark = json.mark
                guard !key.isEmpty else { throw json.error("a key is empty") }
                let compact = try json.readCompactValue()
                let payload = try ImportValue.payload(compact, at: mark, in: json, foundationCheck: foundationCheck)
                try visitor.record(collection: name, key: key, payload: payload)
                progress.advance()
            }
        }
    }

    /// One record line after another, each on a line of its own; blank lines are skipped.
    private static func readRecordLines(
        _ json: JSONStream, into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool
    ) throws {
        var lastCollection: String?
        while true {
            try readRecordLine(json, lastCollection: &lastCollection, into: visitor, progress: progress,
                               foundationCheck: foundationCheck)
            guard let next = try json.peekInLine() else { return }
            guard next == 0x0A else { throw json.error("expected a line break after a record line") }
            guard try json.peekSignificant() != nil else { return }
        }
    }

    /// `{"collection": NAME}` declares a collection; `{"collection": NAME, "key": KEY, "value": VALUE}`
    /// is a record. `"version"` is allowed and ignored.
    private static func readRecordLine(
        _ json: JSONStream, lastCollection: inout String?,
        into visitor: any ImportVisitor, progress: ProgressReporter, foundationCheck: Bool
    ) throws {
        let start = json.mark
        guard try json.peek() == UInt8(ascii: "{") else { throw json.error("expected '{'") }
        var collection: String?
        var key: String?
        var payload: Data?
        try json.readValue(membersAreValues: true) { line in
            let view = line.view
            try view.forEachMember(of: line.entry) { name, value in
                func string() throws -> String {
                    guard view[value].kind == .string else { throw json.error("expected a string", at: line.mark(of: value)) }
                    return view.string(at: value)
                }
                switch view.string(at: name) {
                case "collection": collection = try string()
                case "key": key = try string()
                case "value":
                    var compact: [UInt8] = []
                    view.appendCompactText(of: value, to: &compact)
                    payload = try ImportValue.payload(compact, at: line.mark(of: value), in: json,
                                                      foundationCheck: foundationCheck)
                case "version": break
                case let other:
                    throw json.error("unknown member \(quoted(other)); a record line has collection, key and value",
                                     at: line.mark(of: value))
                }
            }
        }
        guard let collection else { throw json.error("a record line needs \"collection\"", at: start) }
        guard !collection.isEmpty else { throw json.error("a collection name is empty", at: start) }
        if collection != lastCollection {
            try visitor.collection(collection)
            lastCollection = collection
        }
        switch (key, payload) {
        case (nil, nil):
            return
        case let (key?, payload?):
            guard !key.isEmpty else { throw json.error("a key is empty", at: start) }
            try visitor.record(collection: collection, key: key, payload: payload)
            progress.advance()
        default:
            throw json.error("a record line needs both \"key\" and \"value\"", at: start)
        }
    }
}
