public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension RecordStore {
    /// Writes a consistent copy of the whole store to `destination`, as one complete store
    /// file that opens on its own (no `-wal` or `-shm` file needed).
    ///
    /// The copy is one snapshot: every transaction committed before it began, none after.
    /// Writers, this store's own and other processes', keep writing meanwhile. The store file
    /// is only read, as every read reads it: a backup never creates or migrates it, so the copy
    /// has the store's format (a store of an older format stays as it is, and so does its
    /// copy). The copy is first written to a temporary file next to `destination`, flushed to
    /// disk, then moved into place, so `destination` is never a partial copy. It is readable by
    /// its owner only (mode 0600). A store this process may read but not write (another
    /// user's, in a directory it may not write) is copied too. Works for in-memory stores too,
    /// which makes it a way to save one to a file.
    ///
    /// To restore, open the copy (or move it to the store's path while no process has the store
    /// open, removing any `-wal` and `-shm` files left next to that path).
    ///
    /// ```swift
    /// try await store.backup(to: backups.appending(path: "records-2026-11-30.sqlite"))
    /// ```
    /// - Parameters:
    ///   - destination: The file to write the copy to.
    ///   - overwrite: Replace a file already at `destination`; without it an existing file is
    ///     an error and left as it is.
    /// - Throws: ``RecordStoreError`` with operation ``StoreOperation/backup``: ``RecordStoreError/Code/invalidArgument``
    ///   when `destination` exists (without `overwrite`), is the store's own file, is a
    ///   directory, or has a write-ahead log next to it; ``RecordStoreError/Code/cannotOpen``
    ///   when the store file does not exist (nothing is created) or the destination's directory
    ///   is missing; otherwise the failure of reading the store or writing the copy. On any
    ///   failure no file is left at `destination` (an existing one is unchanged) and no
    ///   temporary file is left behind. `CancellationError` when the calling task is cancelled
    ///   during the copy (it stops within a few megabytes), with the same guarantee.
    public nonisolated func backup(to destination: URL, overwrite: Bool = false) async throws {
        try await backup(to: destination, overwrite: overwrite, pagesPerStep: 1_024, afterStep: nil)
    }

    /// ``backup(to:overwrite:)`` copying `pagesPerStep` pages per step of SQLite's backup,
    /// calling `afterStep` after each step that left pages to copy (a test seam).
    nonisolated func backup(
        to destination: URL, overwrite: Bool, pagesPerStep: Int32, afterStep: (@Sendable () -> Void)?
    ) async throws {
        let target = destination.standardizedFileURL.path
        let storePath = url?.path
        guard destination.isFileURL else {
            throw backupError(.invalidArgument, "the destination \(destination) is not a file URL")
        }
        if let locationError = core.locationError { throw locationError }
        try BackupTarget.check(target, storePath: storePath, overwrite: overwrite)
        if let storePath, !(await isPresentForBackup()) {
            throw backupError(.cannotOpen, "there is no store at \(storePath); nothing was written")
        }
        let protection = options.fileProtection
        // The temporary copy made, if any: removed when the request fails after making it (a
        // read whose snapshot turns out stale fails after its body returned).
        let made = Protected<String?>(nil)
        @Sendable func copy(_ engine: RecordEngine) throws {
            let temporary = try BackupTarget.createTemporaryFile(next: target, storePath: storePath, protection: protection)
            made.withLock { $0 = temporary }
            do {
                // One read transaction: every step of the copy reads the same snapshot.
                try engine.readTransaction {
                    try engine.runner.run {
                        try engine.connection.backup(
                            into: temporary, protectionFlag: protection.sqliteOpenFlag,
                            pagesPerStep: pagesPerStep, afterStep: afterStep)
                    }
                }
            } catch var error as RecordStoreError {
                // SQLite reports a failed step on the copy's connection whichever side failed (a
                // page of the store that cannot be read, or the copy's disk): both are named.
                error.detail = error.detail ?? "copying the store to \(target) (reading the store's pages or writing the copy)"
                throw error
            }
        }
        do {
            // Through a reader, as every read: the store is never opened for writing, so it is
            // neither created nor migrated (the copy keeps its format), and a store this
            // process may read but not write is copied too. A reader of such a store reads
            // without locks and checks afterwards that the file did not change meanwhile,
            // failing the read if it did: so the copy goes into place only once the read has
            // returned. (An in-memory store reads on its one connection.)
            try await performRead(.backup, collection: nil) { source in
                guard let engine = source.engine else {
                    throw backupError(.cannotOpen, "there is no store at \(storePath ?? "-"); nothing was written")
                }
                try copy(engine)
            }
            guard let temporary = made.withLock({ $0 }) else {
                throw backupError(.cannotOpen, "no copy was made; nothing was written")
            }
            try BackupTarget.finish(temporary, at: target, storePath: storePath, overwrite: overwrite)
        } catch {
            guard let temporary = made.withLock({ $0 }) else { throw error }
            throw BackupTarget.removing(temporary, after: error, storePath: storePath)
        }
    }

    private nonisolated func backupError(_ code: RecordStoreError.Code, _ detail: String) -> RecordStoreError {
        RecordStoreError(code: code, operation: .backup, path: path, detail: detail)
    }

    /// True when the store has data to copy: it is open or opening, or its file exists.
    private func isPresentForBackup() -> Bool {
        if opening != nil || core.isOpen { return true }
        guard let path else { return true }
        return FileManager.default.fileExists(atPath: path)
    }
}

/// The file-system side of a backup: checks of the destination, the temporary file next to
/// it, and moving the finished copy into place durably.
enum BackupTarget {
    /// Refuses destinations a backup must not write: an existing file (unless `overwrite`),
    /// the store's own file (or its `-wal`, `-shm`, `-journal` or `-observers` file), a directory, a device, FIFO or symbolic link (also one to nothing), a path with a
    /// write-ahead log or a rollback journal next to it (SQLite would apply it to the copy), or
    /// a missing directory.
    static func check(_ target: String, storePath: String?, overwrite: Bool) throws {
        func refuse(_ detail: String, code: RecordStoreError.Code = .invalidArgument) -> RecordStoreError {
            RecordStoreError(code: code, operation: .backup, path: storePath, detail: detail)
        }
        if let storePath, let file = FileKind.storeFile(target, storePath: storePath) {
            throw refuse("the destination \(target) is the store's own \(file)")
        }
        var isDirectory: ObjCBool = false
        // The finished copy is renamed over the destination, which would turn a device, a FIFO
        // or a symbolic link into a regular file (as root, /dev/null). Looked at without
        // following a link: `fileExists` follows one, and a link to nothing (a volume not
        // mounted) would have been replaced by a copy on the wrong disk.
        if let kind = FileKind.nonRegular(at: target) {
            if kind == "a directory" { throw refuse("the destination \(target) is a directory") }
            throw refuse("the destination \(target) is \(kind), not a regular file; it was left as it is")
        }
        if FileManager.default.fileExists(atPath: target), !overwrite {
            throw refuse("a file already exists at \(target); it was left as it is (ask to overwrite it to replace it)")
        }
        // SQLite applies a `-wal` (an open store's log) or a `-journal` (a rollback left by a
        // crash) found next to a database to it when it is opened: to the copy, which would
        // then hold another database's pages.
        for suffix in ["-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: target + suffix) {
            throw refuse("\(target + suffix) exists: a database may be open at the destination, or one left that file "
                         + "when it crashed, and SQLite would apply it to the copy; close it, or remove that file if "
                         + "no process uses it")
        }
        let directory = (target as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            throw refuse("the destination's directory \(directory) does not exist", code: .cannotOpen)
        }
    }

    /// Creates an empty file, mode 0600 and the `protection` class, next to `target` (so that
    /// the final rename stays on one file system) and returns its path. SQLite writes the copy
    /// into it and keeps its permissions.
    static func createTemporaryFile(next target: String, storePath: String?, protection: FileProtection) throws -> String {
        let directory = (target as NSString).deletingLastPathComponent
        let name = (target as NSString).lastPathComponent
        let temporary = (directory as NSString).appendingPathComponent(".\(name).backup-\(UUID().uuidString)")
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let number = errno
            // Said as a store's unwritable directory is: which directory, and that it is not writable.
            let what = [EACCES, EPERM, EROFS].contains(number)
                ? "the copy could not be created because the directory \(directory) is not writable"
                : "could not create the temporary file \(temporary)"
            throw systemError(number, what, storePath: storePath, file: temporary)
        }
        close(descriptor)
        do {
            try protection.apply(to: temporary)
        } catch {
            unlink(temporary)
            throw RecordStoreError(
                code: .cannotOpen, operation: .backup, path: storePath,
                detail: "could not give the copy \(temporary) the protection class \(protection) (\(error.localizedDescription))")
        }
        return temporary
    }

    /// Flushes the finished copy to disk, moves it to `target` (atomically; without
    /// `overwrite` only if nothing appeared there meanwhile) and flushes the directory.
    static func finish(_ temporary: String, at target: String, storePath: String?, overwrite: Bool) throws {
        try synchronize(temporary, storePath: storePath)
        // The flush of a large copy takes about as long as the copy: a task cancelled
        // meanwhile gets no copy in place (the caller removes the temporary file).
        try Task.checkCancellation()
        if overwrite {
            guard rename(temporary, target) == 0 else {
                throw systemError(errno, "could not move the copy to \(target)", storePath: storePath)
            }
        } else {
            // link(2) fails if `target` exists, so a file created meanwhile is never replaced.
            if link(temporary, target) == 0 {
                guard unlink(temporary) == 0 else {
                    throw systemError(errno, "the copy is at \(target), but the temporary file \(temporary) could not be removed",
                                      storePath: storePath)
                }
            } else {
                let number = errno
                let exists = number == EEXIST || FileManager.default.fileExists(atPath: target)
                if exists {
                    throw RecordStoreError(
                        code: .invalidArgument, operation: .backup, path: storePath,
                        detail: "a file already exists at \(target); it was left as it is (ask to overwrite it to replace it)")
                }
                // A file system without hard links: rename, after the check just made.
                guard [EPERM, ENOTSUP, EOPNOTSUPP, ENOSYS].contains(number) else {
                    throw systemError(number, "could not move the copy to \(target)", storePath: storePath)
                }
                guard rename(temporary, target) == 0 else {
                    throw systemError(errno, "could not move the copy to \(target)", storePath: storePath)
                }
            }
        }
        try synchronize((target as NSString).deletingLastPathComponent, storePath: storePath)
    }

    /// Removes the temporary file after `error`, and the rollback journal SQLite leaves beside
    /// it when the copy failed part way (its rollback could not finish); a failed removal is
    /// added to the error.
    static func removing(_ temporary: String, after error: any Error, storePath: String?) -> any Error {
        var failures: [String] = []
        for file in [temporary, temporary + "-journal"] where unlink(file) != 0 && errno != ENOENT {
            failures.append("the temporary file \(file) could not be removed (\(String(cString: strerror(errno))))")
        }
        guard !failures.isEmpty, var storeError = error as? RecordStoreError else { return error }
        storeError.detail = ([storeError.detail].compactMap { $0 } + failures).joined(separator: "; ")
        return storeError
    }

    private static func synchronize(_ path: String, storePath: String?) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw systemError(errno, "could not open \(path) to flush it", storePath: storePath, file: path) }
        defer { close(descriptor) }
        guard FileSync.synchronize(descriptor) else {
            throw systemError(errno, "could not flush \(path) to disk", storePath: storePath)
        }
    }

    private static func systemError(_ number: Int32, _ what: String, storePath: String?, file: String? = nil) -> RecordStoreError {
        let code: RecordStoreError.Code =
            if let file, ProtectedData.isUnavailable(errno: number, path: file) {
                .protectedDataUnavailable
            } else {
                switch number {
            case ENOSPC, EDQUOT: .storageFull
                case EACCES, EPERM, EROFS: .readOnly
                default: .ioError
                }
            }
        return RecordStoreError(
            code: code, operation: .backup, path: storePath, detail: "\(what) (\(String(cString: strerror(number))))")
    }
}
