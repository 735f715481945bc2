public import Foundation

/// A ``SnapshotCache`` operation that failed: which operation, which key, which file, and why.
///
/// A snapshot that exists but cannot be read back (truncated, corrupt, written for another
/// key, or not decodable as the requested type) is this error, never a nil result: the caller
/// decides whether to fetch the data again.
public struct SnapshotCacheError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static constants.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name for the code, such as `"corruptSnapshot"`.
        public let name: String
        init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The snapshot file exists but is not a complete snapshot (truncated, garbage, an
        /// unknown envelope version, or the snapshot of another key).
        public static let corruptSnapshot = Code("corruptSnapshot")
        /// The snapshot is intact but its value does not decode as the requested type.
        public static let undecodableValue = Code("undecodableValue")
        /// The value could not be encoded; nothing was written.
        public static let unencodableValue = Code("unencodableValue")
        /// Reading the file or the directory failed (permissions, I/O, not a file).
        public static let cannotRead = Code("cannotRead")
        /// Creating the directory or writing the snapshot failed; the previous snapshot, if
        /// any, is unchanged.
        public static let cannotWrite = Code("cannotWrite")
        /// Removing a snapshot failed.
        public static let cannotRemove = Code("cannotRemove")
        /// The cache's files are data-protected (``FileProtection``) and the device is locked:
        /// retry after it is unlocked. Only on Apple platforms with data protection.
        public static let protectedDataUnavailable = Code("protectedDataUnavailable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// The operation: `"save"`, `"load"`, `"remove"` or `"removeAll"`.
    public var operation: String
    /// The key concerned (nil for `removeAll`).
    public var key: String?
    /// The file or directory concerned.
    public var path: String
    /// The `errno` of a failed system call, if that is the cause.
    public var systemError: Int32?
    /// The coding error that caused this one, if any.
    public var underlying: (any Error)?
    /// Further explanation.
    public var detail: String?

    init(
        _ code: Code, operation: String, key: String?, path: String, systemError: Int32? = nil,
        underlying: (any Error)? = nil, detail: String? = nil
    ) {
        // The system says EPERM both for a protected file while the device is locked and for
        // a permission problem: only the file's class tells them apart.
        if let systemError, ProtectedData.isUnavailable(errno: systemError, path: path) {
            self.code = .protectedDataUnavailable
        } else {
            self.code = code
        }
        self.operation = operation
        self.key = key
        self.path = path
        self.systemError = systemError
        self.underlying = underlying
        self.detail = detail
    }

    public var description: String {
        var sentence = "SnapshotCache \(operation)"
        if let key { sentence += " of key \(RecordStoreError.quoted(key))" }
        sentence += " failed (\(code)) at \(path)"
        if let detail { sentence += ": \(detail)" }
        if let systemError { sentence += " [\(Self.systemMessage(systemError))]" }
        if let underlying { sentence += " (\(underlying))" }
        return sentence
    }

    static func systemMessage(_ code: Int32) -> String {
        "errno \(code): " + String(cString: strerror(code))
    }
}

extension SnapshotCacheError: LocalizedError {
    /// A sentence a person can act on.
    public var errorDescription: String? {
        let subject = key.map { "the cached snapshot \(RecordStoreError.quoted($0))" } ?? "the snapshot cache"
        let what: String
        switch code {
        case .corruptSnapshot: what = "\(subject) is damaged"
        case .undecodableValue: what = "\(subject) does not hold the expected kind of value"
        case .unencodableValue: what = "\(subject) could not be encoded"
        case .cannotRead: what = "could not read \(subject)"
        case .cannotWrite: what = "could not save \(subject)"
        case .protectedDataUnavailable: what = "\(subject) is protected while the device is locked"
        default: what = "could not remove \(subject)"
        }
        return what.prefix(1).uppercased() + what.dropFirst() + " (\(path))" + (detail.map { ": \($0)" } ?? "") + "."
    }

    /// What a person can do about it.
    public var recoverySuggestion: String? {
        switch code {
        case .corruptSnapshot, .undecodableValue: "Fetch the data again and save a new snapshot."
        case .protectedDataUnavailable: "Retry after the device is unlocked."
        default: "Check that the cache directory exists and is writable."
        }
    }
}
