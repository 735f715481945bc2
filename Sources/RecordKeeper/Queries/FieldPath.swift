/// The path of a field in a stored JSON payload: `dueAt`, or `address.city` for a nested one.
///
/// Each segment is one object key of ASCII letters, digits and `_` (what Swift property names
/// and their snake-case forms are), so the JSON path a query builds from it (`$.address.city`)
/// is a literal this library wrote, never text it was given: a path is checked when it is made,
/// and anything else (`a.b[0]`, `"x"`, `a..b`, an empty name) is refused with ``QueryError``.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    /// The object keys from the payload's top level down.
    public let segments: [String]

    /// The path `name` names, its segments separated by `.`.
    /// - Throws: ``QueryError`` (`invalidField`) when a segment is empty or holds a character
    ///   other than `A`–`Z`, `a`–`z`, `0`–`9` and `_`.
    public init(_ name: String) throws(QueryError) {
        guard let path = FieldPath(stored: name) else {
            throw QueryError(
                .invalidField, fieldName: name,
                detail: "a field path is object keys of letters, digits and _ separated by dots")
        }
        self = path
    }

    /// The path `text` names when it is one, nil otherwise: the one check of a path's text, for
    /// a name given (``init(_:)``) and for one read from the file.
    init?(stored text: String) {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.allSatisfy(Self.isValidSegment) else { return nil }
        self.segments = segments
    }

    init(validSegments: [String]) {
        precondition(validSegments.allSatisfy(Self.isValidSegment))
        self.segments = validSegments
    }

    /// `address.city`.
    public var description: String { segments.joined(separator: ".") }

    /// The SQLite JSON path, `$.address.city`: only validated segments, so it can be written
    /// into SQL (and index DDL, which takes no bound parameters) as a literal.
    var jsonPath: String { "$." + segments.joined(separator: ".") }

    /// The SQL expression reading this field of a record's payload. Payloads are BLOBs
    /// (format 1), and SQLite's JSON functions refuse BLOBs as text JSON: the cast reads the
    /// bytes as UTF-8 text. A declared index has exactly this expression.
    var sqlExpression: String { "json_extract(CAST(payload AS TEXT), '\(jsonPath)')" }

    /// The path with every segment converted by `convert` (a key strategy).
    func mapped(_ convert: (String) -> String) -> FieldPath {
        FieldPath(validSegments: segments.map(convert))
    }

    static func isValidSegment(_ segment: some StringProtocol) -> Bool {
        !segment.isEmpty
            && segment.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "_")
            }
    }
}
