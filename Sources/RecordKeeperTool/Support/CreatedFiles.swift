import Foundation
import RecordKeeper

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What was at a store path before a command that may create the store, so that a command
/// that failed or was interrupted leaves nothing where there was nothing: no empty store, no
/// `-wal`, `-shm` or `-observers` file, no directory it made.
struct CreatedFiles: Sendable {
    static let suffixes = ["", "-wal", "-shm", "-observers"]
    let storePath: String
    /// The files (store path plus suffix) that existed before.
    private let existing: Set<String>
    /// The store file existed and was empty (0 bytes): it goes back to being empty.
    private let wasEmptyFile: Bool
    /// Directories above the store that did not exist, deepest first.
    private let missingDirectories: [String]

    /// Looks at the path now, before the command creates anything.
    init(storePath: String) {
        self.storePath = storePath
        existing = Set(Self.suffixes.filter { FileManager.default.fileExists(atPath: storePath + $0) })
        wasEmptyFile = existing.contains("") && (SystemCalls.fileSize(storePath) == 0)
        var missing: [String] = []
        var directory = Self.parent(of: storePath)
        while !directory.isEmpty, directory != "/", !FileManager.default.fileExists(atPath: directory) {
            missing.append(directory)
            directory = Self.parent(of: directory)
        }
        missingDirectories = missing
    }

    /// The directory part of `path`: "" for a bare name, "/" for a name in the root.
    ///
    /// Not `NSString.deletingLastPathComponent`: on Linux (swift-corelibs-foundation, Swift
    /// 6.3) it traps on a relative name of one character (`"s"`), which is what the walk up
    /// from `s/new.sqlite` reaches.
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }  // "a//b"
        return parent.isEmpty ? "/" : String(parent)
    }

    /// Whether there was no store before (nothing, or an empty file): only then is there
    /// anything to undo.
    var hadNoStore: Bool { !existing.contains("") || wasEmptyFile }

    /// Closes `store` and removes what the command created, after its write failed (and rolled
    /// back). A store that holds collections now (another process wrote to it meanwhile) is
    /// left as it is. Problems are reported as warnings: the original failure is the error.
    ///
    /// The check and the removal happen under the store's write lock
    /// (`RecordStore.removeIfEmpty`): a process waiting to write finds the file gone when it
    /// commits, and says so, instead of committing into the file just before it is removed.
    /// An empty file that was there before is put back as a new empty file renamed over the
    /// store, for the same reason: such a writer notices the replacement.
    func undo(_ store: RecordStore) async {
        guard hadNoStore else { return }
        let removed: Bool
        do {
            removed = try await store.removeIfEmpty { [self] in removeFiles() }
        } catch {
            warn("\(storePath) was left in place: it could not be checked (\(error.localizedDescription))")
            return
        }
        guard removed else {
            warn("\(storePath) was left in place: another process wrote to it meanwhile")
            return
        }
        // Deepest first; one the command never got to make is not there.
        for directory in missingDirectories where !SystemCalls.removeDirectory(directory) {
            if SystemCalls.isNoSuchFile(SystemCalls.lastErrorNumber) { continue }
            warn("could not remove the directory \(directory): \(SystemCalls.lastErrorMessage)")
            break
        }
    }

    /// Removes the files the command created, and puts an empty store file back as it was.
    private func removeFiles() {
        for suffix in Self.suffixes where !existing.contains(suffix) || (suffix.isEmpty && wasEmptyFile) {
            if suffix.isEmpty, wasEmptyFile {
                if !SystemCalls.replaceWithEmptyFile(storePath) {
                    warn("could not empty \(storePath) again: \(SystemCalls.lastErrorMessage)")
                }
                continue
            }
            let path = storePath + suffix
            if !SystemCalls.removeFile(path), !SystemCalls.isNoSuchFile(SystemCalls.lastErrorNumber) {
                warn("could not remove \(path): \(SystemCalls.lastErrorMessage)")
            }
        }
    }

    private func warn(_ message: String) {
        StandardError.writeLine("recordkeeper: warning: " + message)
    }
}
