import Foundation
import RecordKeeperSync
import RecordKeeper
import RecordKeeperCommandLine

/// Where the store is, and opening it the way each kind of command needs.
struct StoreAccess: Sendable {
    let path: String
    /// The stores this command made, closed when it ends (see `OpenedStores`).
    var opened = OpenedStores()

    /// `--store PATH`, else `RECORDKEEPER_STORE`, else `records.sqlite` in the current directory.
    static func resolve(
        option: String?, environment: [String: String], opened: OpenedStores = OpenedStores()
    ) throws(ToolError) -> StoreAccess {
        let path = option ?? environment["RECORDKEEPER_STORE"] ?? "records.sqlite"
        guard !path.isEmpty else {
            throw ToolError(.usage, "the store path is empty (check --store and RECORDKEEPER_STORE)")
        }
        return StoreAccess(path: path, opened: opened)
    }

    var url: URL { URL(fileURLWithPath: path) }

    /// What is at the store path.
    enum State: Equatable {
        case missing
        /// A file of zero bytes: SQLite would make it a database, but it holds no store yet.
        case emptyFile
        /// A directory, a FIFO, a device or a socket (links followed): never a store.
        case nonRegular(String)
        case file
    }

    func state() throws(ToolError) -> State {
        guard FileManager.default.fileExists(atPath: path) else { return .missing }
        // Links followed: a link's own size is its target path's length.
        let target = url.resolvingSymlinksInPath().path
        if let kind = FileKind.nonRegular(at: target) { return .nonRegular(kind) }
        let size: Int
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: target)
            size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        } catch {
            throw ToolError(.ioError, "cannot inspect \(path): \(error.localizedDescription)")
        }
        return size == 0 ? .emptyFile : .file
    }

    /// Whether a store with contents is at the path (not missing, not an empty file).
    var holdsStore: Bool {
        get throws(ToolError) { try state() == .file }
    }

    /// The store for a command that only reads: never creates a file, and never turns an empty
    /// file into a store. A missing or empty file is reported (exit 66) before `RecordStore` is
    /// constructed.
    func existingStore() throws(ToolError) -> RecordStore {
        switch try state() {
        case .missing:
            throw ToolError(.notFound, "no store at \(path) (give --store PATH or set RECORDKEEPER_STORE; "
                            + "put, apply and import create one)")
        case .emptyFile:
            throw ToolError(.notFound, "\(path) is an empty file, not a store yet (put, apply and import initialize it)")
        case .nonRegular(let kind):
            throw Self.notAStoreFile(path, kind)
        case .file:
            return opened.remember(RecordStore(url: url))
        }
    }

    /// The store for a command that writes: created on first write if missing.
    func writableStore() throws(ToolError) -> RecordStore {
        if case .nonRegular(let kind) = try state() { throw Self.notAStoreFile(path, kind) }
        return opened.remember(RecordStore(url: url))
    }

    /// "PATH is a FIFO, not a store file" (exit 69).
    static func notAStoreFile(_ path: String, _ kind: String) -> ToolError {
        ToolError(.storeRefused, "\(path) is \(kind), not a store file")
    }
}

/// The stores one command made. The tool closes them before it exits (`RecordStore.close()`:
/// a truncating checkpoint, so the store file alone holds every commit and the `-wal` and
/// `-shm` files go), instead of relying on the stores being released before the process
/// ends, which a store's own background work (a scheduled checkpoint, the release of the
/// observers' lock) may delay past the exit.
final class OpenedStores: Sendable {
    private let stores = Protected([RecordStore]())

    /// Keeps `store` to close at the end, and returns it.
    func remember(_ store: RecordStore) -> RecordStore {
        stores.withLock { $0.append(store) }
        return store
    }

    /// Closes every store the command made. After a command that failed because the store
    /// stayed locked past the busy timeout, the closing checkpoint does not wait for that lock
    /// again: the command waits the busy timeout once, as docs/CLI.md says, not twice.
    func closeAll(after error: (any Error)? = nil) async {
        let stores = stores.withLock { stores in
            defer { stores.removeAll() }
            return stores
        }
        let lockedOut = (error as? RecordStoreError)?.code == .busy
        for store in stores {
            if lockedOut { await store.closeWithoutWaiting() } else { await store.close() }
        }
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
        case .cannotOpen, .cannotRead, .readOnly, .storageFull, .ioError:
            code = .ioError
        case .busy, .fileReplaced:
            // Nothing was written; the same command run again uses the file at the path then.
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
