public import Foundation

/// The error a repository throws when stored records and Swift values do not fit together:
/// a record that does not decode, a value that does not encode, a key that names no item, or a
/// document schema version this code does not support.
///
/// It always names the ``collection`` and, where there is one, the record ``key``, and keeps
/// the ``underlying`` coding error. Storage failures are not wrapped: they arrive as
/// ``RecordStoreError`` and ``RecordConflict`` unchanged.
///
/// ```swift
/// do {
///     books = try await repository.load()
/// } catch let error as RepositoryError where error.code == .undecodableRecord {
///     log("cannot read \(error.collection)/\(error.key ?? "?"): \(error.underlying.map(String.init(describing:)) ?? "")")
/// }
/// ```
public struct RepositoryError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static constants, e.g. `.undecodableRecord`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name for the code, such as `"undecodableRecord"`.
        public let name: String

        init(_ name: String) { self.name = name }

        public var description: String { name }

        /// A stored record's payload could not be decoded as the expected type.
        public static let undecodableRecord = Code("undecodableRecord")
        /// A record key does not correspond to an item ID (for example in a change stream, or
        /// a record stored under a key other than the one its item's ID gives).
        public static let keyMismatch = Code("keyMismatch")
        /// The collection's payloads were written with other date or key strategies than the
        /// repository's (recorded with the collection, format 6); nothing was read into values
        /// and nothing was written.
        public static let codingMismatch = Code("codingMismatch")
        /// A value (or its ID) could not be encoded; nothing was written.
        public static let unencodableValue = Code("unencodableValue")
        /// A document uses a schema version the document type does not support; nothing was
        /// read into a value, or nothing was written.
        public static let unsupportedSchemaVersion = Code("unsupportedSchemaVersion")
        /// A document named a group or record key that documents may not use.
        public static let invalidDocumentKey = Code("invalidDocumentKey")
        /// A migration step failed on a stored record (named by ``RepositoryError/key``), or the
        /// migrated record does not decode; nothing was changed.
        public static let migrationFailed = Code("migrationFailed")
        /// The stored records need a migration step the code does not have; nothing was changed.
        public static let missingMigrationStep = Code("missingMigrationStep")
        /// The collection was written by a newer version of the app, with a higher item version
        /// than the code knows; it was left untouched. With a ``RepositoryError/key``: that
        /// record (pulled by sync from a device running a newer app) has the higher version;
        /// it is not read as this version's type (``RecordRepository/loadPartial()`` skips it).
        public static let newerItemVersion = Code("newerItemVersion")
    }

    /// What kind of failure this is.
    public var code: Code
    /// The collection concerned.
    public var collection: String
    /// The record key concerned, if any.
    public var key: String?
    /// The coding error that caused this one, if any (a `DecodingError`, `EncodingError`, …).
    public var underlying: (any Error)?
    /// The schema version found, for ``Code/unsupportedSchemaVersion``.
    public var schemaVersion: Int?
    /// The schema versions the document type supports, for ``Code/unsupportedSchemaVersion``.
    public var supportedSchemaVersions: ClosedRange<Int>?
    /// The item (or document schema) version stored, for migration failures and
    /// ``Code/newerItemVersion``.
    public var itemVersion: Int?
    /// Further explanation.
    public var detail: String?

    /// Creates an error. Library code fills in the context it knows.
    public init(
        code: Code, collection: String, key: String? = nil, underlying: (any Error)? = nil,
        schemaVersion: Int? = nil, supportedSchemaVersions: ClosedRange<Int>? = nil, itemVersion: Int? = nil,
        detail: String? = nil
    ) {
        self.code = code
        self.collection = collection
        self.key = key
        self.underlying = underlying
        self.schemaVersion = schemaVersion
        self.supportedSchemaVersions = supportedSchemaVersions
        self.itemVersion = itemVersion
        self.detail = detail
    }

    /// One line with every piece of context, for logs.
    public var description: String {
        var parts = ["RepositoryError.\(code.name)", "collection \(RecordStoreError.quoted(collection))"]
        if let key { parts.append("key \(RecordStoreError.quoted(key))") }
        if let schemaVersion { parts.append("schema version \(schemaVersion)") }
        if let supportedSchemaVersions { parts.append("supported \(Self.shown(supportedSchemaVersions))") }
        if let itemVersion { parts.append("stored version \(itemVersion)") }
        if let detail { parts.append(detail) }
        if let underlying { parts.append("underlying: \(underlying)") }
        return parts.joined(separator: ", ")
    }

    static func shown(_ versions: ClosedRange<Int>) -> String {
        versions.count == 1 ? "\(versions.lowerBound)" : "\(versions.lowerBound)…\(versions.upperBound)"
    }
}

extension RepositoryError: LocalizedError {
    /// A sentence a person can act on: what failed, where, and why.
    public var errorDescription: String? {
        let place = "collection \(RecordStoreError.quoted(collection))"
            + (key.map { " (key \(RecordStoreError.quoted($0)))" } ?? "")
        switch code {
        case .undecodableRecord:
            return "Could not read \(place): the stored record does not decode"
                + (underlying.map { " (\(Self.summary(of: $0)))" } ?? "") + "."
        case .keyMismatch:
            return "Could not read \(place): " + (detail ?? "the key does not correspond to an item ID") + "."
        case .unencodableValue:
            return "Could not save to \(place): " + (detail ?? "the value does not encode")
                + (underlying.map { " (\(Self.summary(of: $0)))" } ?? "") + "; nothing was written."
        case .codingMismatch:
            return "Could not use \(place): "
                + (detail ?? "its items were written with other payload strategies than this repository's") + "."
        case .unsupportedSchemaVersion:
            let found = schemaVersion.map(String.init) ?? "unknown"
            let supported = supportedSchemaVersions.map { " (supported: \(Self.shown($0)))" } ?? ""
            return "Could not use the document in \(place): schema version \(found) is not supported\(supported)"
                + (detail.map { "; \($0)" } ?? "") + "."
        case .invalidDocumentKey:
            return "Could not save to \(place): " + (detail ?? "the document key is not allowed") + "."
        case .migrationFailed:
            return "Could not migrate \(place): " + (detail ?? "a migration step failed")
                + (underlying.map { " (\(Self.summary(of: $0)))" } ?? "") + "."
        case .missingMigrationStep:
            return "Could not migrate \(place): " + (detail ?? "a migration step is missing") + "."
        case .newerItemVersion:
            return "Could not use \(place): " + (detail ?? "it was written by a newer version of the app")
                + "; it was left untouched."
        default:
            return "Could not use \(place): " + (detail ?? "a repository error occurred (\(code.name))") + "."
        }
    }

    /// What a person can do about it.
    public var recoverySuggestion: String? {
        switch code {
        case .undecodableRecord, .keyMismatch:
            return "The stored record was left unchanged. Update the app, or repair or remove the record."
        case .unsupportedSchemaVersion:
            return "Update the app to a version that knows this schema; the stored records were left unchanged."
        case .newerItemVersion:
            return "Update the app to a version that knows this item version; the stored records were left unchanged."
        case .codingMismatch:
            return "Open the repository with the payload strategies recorded for the collection (an app that does not "
                + "know them needs an update), or raise the item version to rewrite every item with the new ones; "
                + "the stored records were left unchanged."
        case .migrationFailed, .missingMigrationStep:
            return "The stored records were left unchanged. Fix the migration step and try again."
        default:
            return nil
        }
    }

    /// A short, readable form of a coding error (its debug description and coding path).
    private static func summary(of error: any Error) -> String {
        switch error {
        case let error as DecodingError:
            switch error {
            case .dataCorrupted(let context), .keyNotFound(_, let context),
                 .typeMismatch(_, let context), .valueNotFound(_, let context):
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                return context.debugDescription + (path.isEmpty ? "" : " at \(path)")
            @unknown default:
                return String(describing: error)
            }
        case let error as EncodingError:
            switch error {
            case .invalidValue(_, let context):
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                return context.debugDescription + (path.isEmpty ? "" : " at \(path)")
            @unknown default:
                return String(describing: error)
            }
        default:
            return String(describing: error)
        }
    }
}
