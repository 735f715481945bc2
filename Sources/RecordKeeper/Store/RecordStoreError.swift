import Foundation

/// The error every `RecordStore` operation throws (besides `CancellationError` and
/// ``RecordConflict``).
///
/// It says what failed (``code``), during which ``operation``, on which ``collection`` and
/// ``key`` where there is one, and keeps SQLite's extended result code and message when SQLite
/// reported the failure. Payload bytes never appear in it.
///
/// ```swift
/// do {
///     try await store.put("notes", key: "today", data: data)
/// } catch let error as RecordStoreError where error.code == .storageFull {
///     showDiskFullAlert(error.localizedDescription)
/// }
/// ```
public struct RecordStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static constants, e.g. `.storageFull`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name for the code, such as `"storageFull"`.
        public let name: String

        init(_ name: String) { self.name = name }

        public var description: String { name }

        /// A collection name was empty.
        public static let invalidCollectionName = Code("invalidCollectionName")
        /// A record key was empty.
        public static let invalidKey = Code("invalidKey")
        /// An argument was out of range (for example a negative page size).
        public static let invalidArgument = Code("invalidArgument")
        /// The file exists but is not an SQLite database. It was left unchanged.
        public static let notADatabase = Code("notADatabase")
        /// The file is an SQLite database of another application. It was left unchanged.
        public static let foreignDatabase = Code("foreignDatabase")
        /// The store was written by a newer RecordKeeper whose format this version cannot read.
        public static let newerFormat = Code("newerFormat")
        /// SQLite found the database file damaged.
        public static let corruptStore = Code("corruptStore")
        /// The store file or its directory could not be created or opened.
        public static let cannotOpen = Code("cannotOpen")
        /// This process may not read the store file (its permissions deny it): not even reads
        /// work. A file it may read but not write is ``readOnly`` instead, and can be read.
        public static let cannotRead = Code("cannotRead")
        /// A write was refused because the store is read-only (file permissions, a directory
        /// that is not writable, a read-only volume), or a new store could not be created
        /// because its directory is not writable. Reads of such a store work.
        public static let readOnly = Code("readOnly")
        /// The store's files are data-protected (``FileProtection``) and the device is locked:
        /// the system refuses to open or read them until the user unlocks it. Nothing was
        /// written; retry after the device is unlocked (for example when the app becomes
        /// active, or on `protectedDataDidBecomeAvailable`). Only on Apple platforms with data
        /// protection; never reported for a file that is merely read-only.
        public static let protectedDataUnavailable = Code("protectedDataUnavailable")
        /// The disk (or the database's size limit) is full.
        public static let storageFull = Code("storageFull")
        /// Another connection held a lock for longer than the busy timeout.
        public static let busy = Code("busy")
        /// A disk I/O error.
        public static let ioError = Code("ioError")
        /// A key or payload is larger than SQLite accepts.
        public static let tooBig = Code("tooBig")
        /// A stored record does not have the shape this library writes.
        public static let malformedRecord = Code("malformedRecord")
        /// The store file was deleted, moved or replaced while the store had it open; the
        /// write was not committed. The next request opens whatever file is at the path then.
        public static let fileReplaced = Code("fileReplaced")
        /// A commit failed on purpose, after `failNextCommitForTesting()` (`RecordKeeperTestSupport`).
        public static let injectedFailure = Code("injectedFailure")
        /// A transaction or snapshot object was used after its body returned.
        public static let misuse = Code("misuse")
        /// Any other SQLite failure; see ``RecordStoreError/sqliteCode``.
        public static let sqlite = Code("sqlite")
    }

    /// What kind of failure this is.
    public var code: Code
    /// The operation that failed: `.open`, `.read`, `.apply`, `.replace`, …
    public var operation: StoreOperation
    /// The collection concerned, if any.
    public var collection: String?
    /// The record key concerned, if any.
    public var key: String?
    /// The store file, or nil for an in-memory store.
    public var path: String?
    /// SQLite's extended result code, when SQLite reported the failure.
    public var sqliteCode: Int32?
    /// SQLite's message, read right after the failure.
    public var sqliteMessage: String?
    /// Further explanation, such as the format versions involved.
    public var detail: String?

    /// Creates an error. Library code fills in the context it knows.
    public init(
        code: Code, operation: StoreOperation, collection: String? = nil, key: String? = nil,
        path: String? = nil, sqliteCode: Int32? = nil, sqliteMessage: String? = nil,
        detail: String? = nil
    ) {
        self.code = code
        self.operation = operation
        self.collection = collection
        self.key = key
        self.path = path
        self.sqliteCode = sqliteCode
        self.sqliteMessage = sqliteMessage
        self.detail = detail
    }

    /// One line with every piece of context, for logs.
    public var description: String {
        var parts = ["RecordStoreError.\(code.name) during \(operation)"]
        if let collection { parts.append("collection \(Self.quoted(collection))") }
        if let key { parts.append("key \(Self.quoted(key))") }
        if let path { parts.append("path \(path)") }
        if let sqliteCode { parts.append("SQLite code \(sqliteCode)") }
        if let sqliteMessage { parts.append("SQLite message \"\(sqliteMessage)\"") }
        if let detail { parts.append(detail) }
        return parts.joined(separator: ", ")
    }

    /// Quotes a name for a message, showing control characters (such as NUL) escaped and
    /// shortening very long names so a message stays readable.
    static func quoted(_ name: String) -> String {
        var shown = name
        if shown.count > 80 { shown = String(shown.prefix(77)) + "…" }
        let escaped = shown.unicodeScalars.map { scalar -> String in
            switch scalar {
            case "\"": return "\\\""
            case "\\": return "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                return "\\u{\(String(scalar.value, radix: 16))}"
            default: return String(scalar)
            }
        }
        return "\"" + escaped.joined() + "\""
    }
}
