import Foundation
import RecordKeeper

/// Where the store is, and opening it the way each kind of command needs.
struct StoreAccess: Sendable {
    let path: String

    /// `--store PATH`, else `RECORDKEEPER_STORE`, else `records.sqlite` in the current directory.
    static func resolve(option: String?, environment: [String: String]) throws(ToolError) -> StoreAccess {
        let path = option ?? environment["RECORDKEEPER_STORE"] ?? "records.sqlite"
        guard !path.isEmpty else {
            throw ToolError(.usage, "the store path is empty (check --store and RECORDKEEPER_STORE)")
        }
        return StoreAccess(path: path)
    }

    var url: URL { URL(fileURLWithPath: path) }

    var exists: Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
    }

    /// The store for a command that only reads: never creates a file. A missing file is reported
    /// (exit 66) before `RecordStore` is constructed.
    func existingStore() throws(ToolError) -> RecordStore {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ToolError(.notFound, "no store at \(path) (give --store PATH or set RECORDKEEPER_STORE; "
                            + "put, apply and import create one)")
        }
        guard !isDirectory.boolValue else {
            throw ToolError(.storeRefused, "\(path) is a directory, not a store file")
        }
        return RecordStore(url: url)
    }

    /// The store for a command that writes: created on first write if missing.
    func writableStore() throws(ToolError) -> RecordStore {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ToolError(.storeRefused, "\(path) is a directory, not a store file")
        }
        return RecordStore(url: url)
    }
}

extension ToolError {
    /// Translates a library error into a message and exit code. The library's description names
    /// the operation, collection, key and path, and never contains payload bytes.
    init(_ error: RecordStoreError) {
        let code: ExitCode
        switch error.code {
        case .invalidCollectionName, .invalidKey, .invalidArgument, .tooBig:
            code = .dataError
        case .notADatabase, .foreignDatabase, .newerFormat, .corruptStore, .malformedRecord:
            code = .storeRefused
        case .cannotOpen, .readOnly, .storageFull, .ioError:
            code = .ioError
        case .busy:
            code = .conflict
        default:
            code = .internalError
        }
        var message = error.errorDescription ?? error.description
        if let suggestion = error.recoverySuggestion {
            message += " " + suggestion
        }
        self.init(code, message)
    }
}
