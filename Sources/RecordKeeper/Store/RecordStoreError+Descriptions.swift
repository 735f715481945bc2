public import Foundation

extension RecordStoreError: LocalizedError {
    /// A sentence a person can act on: what failed, where, and why.
    public var errorDescription: String? {
        var sentence: String
        if operation == .open {
            sentence = "Could not open " + (path.map { "the store at \($0)" } ?? "the in-memory store")
        } else if operation == .backup {
            sentence = "Could not back up " + (path.map { "the store at \($0)" } ?? "the in-memory store")
        } else {
            let verb = Self.verb(for: operation, hasCollection: collection != nil)
            sentence = "Could not \(verb)"
            if let collection { sentence += " collection \(Self.quoted(collection))" }
            if let key { sentence += " (key \(Self.quoted(key)))" }
            if let path { sentence += verb.hasSuffix("the store") ? " at \(path)" : " in store \(path)" }
        }
        // A reason may end in a period of its own (Foundation's messages do): one is enough.
        var reason = reason
        while reason.hasSuffix(".") { reason.removeLast() }
        sentence += ": " + reason
        if operation == .backup, let detail, !reason.contains(detail) {
            sentence += " (\(detail))"  // A backup's detail names the destination.
        }
        if let sqliteMessage, code == .sqlite || code == .ioError || code == .corruptStore {
            sentence += " (SQLite: \(sqliteMessage))"
        }
        return sentence + "."
    }

    /// What a person can do about it.
    public var recoverySuggestion: String? {
        switch code {
        case .invalidArgument where (operation == .query || operation == .count) && key != nil:
            // A record that is not JSON (see `RecordQueries.query`): the request was fine.
            return "Store that record as JSON or remove it, then query again; nothing was changed."
        case .invalidCollectionName, .invalidKey, .invalidArgument:
            return "Correct the request; nothing of it was written."
        case .notADatabase, .foreignDatabase:
            return "Point the store at its own file; RecordKeeper left this file unchanged."
        case .newerFormat:
            return "Update the app (or the recordkeeper tool) to a version that knows this format."
        case .corruptStore:
            return "Keep a copy of the file and inspect it with `recordkeeper check`."
        case .cannotOpen where Self.isOpenFilesLimitDetail(detail):
            return "Close files this process keeps open, or raise its limit of open files (ulimit -n), and try again; nothing was written."
        case .cannotOpen:
            return "Check that the directory exists or can be created, and that nothing else is in the way."
        case .readOnly where operation == .backup:
            // A backup only reads the store: what was not writable is the destination.
            return "Choose a destination in a directory this user may write; nothing was written there."
        case .readOnly:
            return "Make the store file, its directory and any -wal and -shm files beside it writable."
        case .protectedDataUnavailable:
            return "Retry after the device is unlocked; nothing was written. Work that must run while it is locked needs a weaker file protection class."
        case .cannotRead:
            return "Give this user permission to read the store file, or open it as its owner; nothing was changed."
        case .storageFull:
            return "Free some disk space and try again; committed records are intact."
        case .busy:
            return "Another process holds the store; try again when it is done."
        case .ioError:
            return "Check the disk and try again."
        case .fileReplaced:
            return "If the file was deleted or moved by mistake, put it back before anything writes again: the next "
                + "request uses whatever file is at the path then, and creates a new, empty store if none is. To use a file restored there, "
                + "stop every process that has the store open and remove its -wal and -shm first "
                + "(docs/BACKUP.md, \"Restore\"): the old file's log would be applied to it."
        default:
            return nil
        }
    }

    private var reason: String {
        switch code {
        case .invalidCollectionName: return detail ?? "a collection name must not be empty"
        case .invalidKey: return detail ?? "a record key must not be empty"
        case .invalidArgument: return detail ?? "an argument is out of range"
        case .notADatabase: return "the file is not an SQLite database"
        case .foreignDatabase: return "the file is an SQLite database of another application"
        case .newerFormat: return "the store was written by a newer RecordKeeper" + (detail.map { " (\($0))" } ?? "")
        case .corruptStore: return "the database file is damaged"
        case .cannotOpen: return detail ?? "the file or its directory could not be opened"
        case .cannotRead: return "cannot read the store file" + (detail.map { " (\($0))" } ?? "")
        case .readOnly: return detail ?? "the store is read-only"
        case .protectedDataUnavailable:
            return "the store's files are protected while the device is locked" + (detail.map { " (\($0))" } ?? "")
        case .storageFull: return "the disk is full"
        case .busy: return detail ?? "another connection kept the store locked past the busy timeout"
        case .ioError: return "a disk I/O error occurred"
        case .tooBig: return "the key or payload is too large"
        case .malformedRecord: return detail ?? "a stored record is malformed"
        case .fileReplaced:
            return "the store file was deleted, moved or replaced while it was open; nothing was written"
        case .injectedFailure: return "a commit failure was injected for testing; nothing was written"
        case .misuse: return detail ?? "the API was used outside its scope"
        default: return sqliteMessage ?? detail ?? "SQLite reported an error"
        }
    }

    private static func verb(for operation: StoreOperation, hasCollection: Bool) -> String {
        switch operation.purpose {
        case .open: return "open"
        case .read: return hasCollection ? "read" : "read the store"
        case .save: return hasCollection ? "save to" : "save"
        case .delete: return hasCollection ? "delete from" : "delete"
        case .replace: return "replace"
        case .remove: return "remove"
        case .list: return "list the collections"
        case .inspect: return "inspect the store"
        case .backUp: return hasCollection ? "back up" : "back up the store"
        case .index: return hasCollection ? "change the indexes of" : "change the indexes"
        }
    }
}
