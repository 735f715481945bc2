import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `import FILE|-`: merge (default) or `--replace`, all or nothing; `--dry-run` only counts.
///
/// - Dry run: one pass over the input against a read snapshot; the store is never created.
/// - Merge: one pass inside one write transaction, comparing each record with the stored one.
/// - Replace, or a store that does not exist yet: a counting pass first (snapshot, or no store
///   at all), then the writing pass. Input that cannot be read twice (standard input, a pipe
///   such as `/dev/stdin` or `<(command)`, a FIFO) is first copied into an anonymous file
///   (created 0600 in a private directory and unlinked at once); only a regular file is
///   opened again.
/// Malformed input fails its pass before anything commits, so nothing is written. An import
/// that creates the store and fails, or is stopped by SIGINT, SIGTERM or SIGHUP, removes the
/// store and whatever else it created (`CreatedFiles`), then dies of the signal.
enum ImportCommand {
    /// Where the import reads from.
    enum Input: Sendable {
        case file(String)
        case standardInput
        /// Standard input or a file that is not a regular file, copied into an anonymous file
        /// (see `SystemCalls.anonymousFile`) so that it can be read twice; read from its start
        /// each time.
        case copy(Int32, name: String)
    }

    static func run(_ context: CommandContext) async throws -> ExitCode {
        let file = context.positional(0)
        let replace = context.arguments.has("replace")
        let dryRun = context.arguments.has("dry-run")
        let showProgress = ProgressReporter.shouldShow(quiet: context.quiet)
        if file != "-", let number = SystemCalls.checkReadable(file) {
            // Report a missing input before touching the store (without opening it: a FIFO
            // would be consumed).
            throw ToolError(SystemCalls.isNoSuchFile(number) ? .notFound : .ioError,
                            "cannot open \(file): \(String(cString: strerror(number)))")
        }
        // A directory, a FIFO or a device at the store path is refused before the input is
        // read, by a dry run too (which would otherwise count against "no store yet").
        if case .nonRegular(let kind) = try context.store.state() {
            throw StoreAccess.notAStoreFile(context.store.path, kind)
        }
        let given: Input = file == "-" ? .standardInput : .file(file)

        if dryRun {
            let counts = try await plan(given, store: context.store, replace: replace, showProgress: showProgress)
            try context.output.write("dry run: would add \(counts.added), change \(counts.changed) and remove "
                                     + "\(counts.removed) records (\(counts.unchanged) unchanged) in "
                                     + "\(counts.collections) collections; nothing was written"
                                     + (try context.store.holdsStore ? "" : " (no store at \(context.store.path) yet; import creates it)")
                                     + "\n")
            return .ok
        }

        // Replace needs counts from before the write; a missing store must not be created for
        // input that turns out malformed. Both read the input once before writing, so input
        // that a second open would not give again (standard input, a pipe, a FIFO) is first
        // copied into an anonymous file (no name, no leftovers). Opened again, a pipe that was
        // read gives nothing, and a FIFO waits for a writer inside the write transaction.
        let needsFirstPass = try replace || !context.store.holdsStore
        let input: Input = needsFirstPass && (file == "-" || SystemCalls.readsOnce(file))
            ? .copy(try copy(file == "-" ? ByteReader(standardInput: ()) : ByteReader(path: file)),
                    name: file == "-" ? "standard input" : file)
            : given
        defer {
            if case .copy(let descriptor, _) = input { _ = SystemCalls.closeDescriptor(descriptor) }
        }

        var counts = ImportCounts()
        if needsFirstPass {
            counts = try await plan(input, store: context.store, replace: replace, showProgress: showProgress)
            // Nothing named (an empty file, `{"collections": {}}`): nothing to create or write,
            // and `--replace` touches only collections the input names.
            if counts.collections == 0 { return try reportNothingImported(context) }
        }
        let created = CreatedFiles(storePath: context.store.path)
        let createsStore = try !context.store.holdsStore && created.hadNoStore
        let store = try context.store.writableStore()
        let write: @Sendable () async throws -> ImportCounts = {
            try await store.write { transaction in
                #if DEBUG
                    waitAtTestGate()
                #endif
                // A merge counts inside its transaction, also after a first pass: another
                // process may have created the store or the records meanwhile.
                let applier = ImportApplier(transaction: transaction, replace: replace, classify: !replace)
                let progress = ProgressReporter(verb: "imported", isEnabled: showProgress)
                defer { progress.finish() }
                try readDocument(input, into: applier, progress: progress, foundationCheck: !needsFirstPass)
                return try applier.finish()
            }
        }
        let written: ImportCounts
        if createsStore {
            // Interrupted or failed, an import into a new path leaves nothing there.
            let interruption = Interruption(activity: "stopping the import; nothing of it is kept")
            defer { interruption.end() }
            do {
                written = try await interruption.run(write)
            } catch {
                await created.undo(store)
                interruption.reraiseIfReceived()
                throw error
            }
            if interruption.signalReceived != nil {
                StandardError.writeLine("recordkeeper: the import had committed when it was interrupted; it is kept")
            }
        } else {
            written = try await write()
        }
        context.written.set()
        if !replace { counts = written }
        if counts.collections == 0 { return try reportNothingImported(context) }
        if !context.quiet {
            try context.output.write("imported \(counts.collections) collections: added \(counts.added), changed "
                                     + "\(counts.changed), removed \(counts.removed), unchanged \(counts.unchanged)\n")
        }
        return .ok
    }

    /// The summary of an input that names no collection (and so holds no record): it imported
    /// nothing, which the summary says rather than counting zeros.
    private static func reportNothingImported(_ context: CommandContext) throws -> ExitCode {
        if !context.quiet {
            try context.output.write("the input holds no collections and no records; nothing was imported\n")
        }
        return .ok
    }

    /// Counts what importing `input` would do, without writing and without creating a store.
    private static func plan(
        _ input: Input, store access: StoreAccess, replace: Bool, showProgress: Bool
    ) async throws -> ImportCounts {
        guard try access.holdsStore else {
            let planner = ImportPlanner(lookup: { _, _ in nil }, storedCounts: [:], replace: replace)
            let progress = ProgressReporter(verb: "checked", isEnabled: showProgress)
            defer { progress.finish() }
            try readDocument(input, into: planner, progress: progress)
            return planner.finish()
        }
        let store = try access.existingStore()
        return try await store.snapshot { snapshot in
            var storedCounts: [String: Int] = [:]
            if replace {
                for summary in try snapshot.collections() { storedCounts[summary.name] = summary.recordCount }
            }
            let planner = ImportPlanner(lookup: { try snapshot.value($0, key: $1) },
                                        storedCounts: storedCounts, replace: replace)
            let progress = ProgressReporter(verb: "checked", isEnabled: showProgress)
            defer { progress.finish() }
            try readDocument(input, into: planner, progress: progress)
            return planner.finish()
        }
    }

    /// Reads the whole input into `visitor`; malformed input becomes one exit-65 message.
    private static func readDocument(_ input: Input, into visitor: any ImportVisitor,
                                      progress: ProgressReporter, foundationCheck: Bool = true) throws {
        let reader: ByteReader
        switch input {
        case .file(let path): reader = try ByteReader(path: path)
        case .standardInput: reader = ByteReader(standardInput: ())
        case .copy(let descriptor, let name):
            let copy = SystemCalls.reopenFromStart(descriptor)
            guard copy >= 0 else {
                throw ToolError(.ioError, "cannot read the copy of standard input: \(SystemCalls.lastErrorMessage)")
            }
            reader = ByteReader(descriptor: copy, name: name, ownsDescriptor: true)
        }
        do {
            try ImportDocument.read(reader, into: visitor, progress: progress, foundationCheck: foundationCheck)
        } catch let error as JSONInputError {
            progress.finish()
            throw ToolError(.dataError, "\(reader.name): line \(error.line), column \(error.column): "
                            + "\(error.message); nothing was written")
        }
    }

    /// Copies what `reader` reads (constant memory) into a file that only this process can
    /// reach and that disappears with it, however it ends; returns its descriptor.
    private static func copy(_ reader: ByteReader) throws(ToolError) -> Int32 {
        let temporary = FileManager.default.temporaryDirectory.path
        let (descriptor, failure) = SystemCalls.anonymousFile(in: temporary)
        guard descriptor >= 0 else {
            throw ToolError(.ioError, (failure ?? "cannot create a temporary file") + " (to read \(reader.name) twice)")
        }
        let writer = ByteWriter(descriptor: descriptor, name: "the copy of \(reader.name)")
        var piece = [UInt8](repeating: 0, count: 1 << 16)
        do {
            while true {
                let count = try reader.read(into: &piece, 0..<piece.count)
                if count == 0 { break }
                try writer.write(piece[0..<count])
            }
            try writer.flush()
        } catch {
            _ = SystemCalls.closeDescriptor(descriptor)  // The read or write error is the one to report.
            throw error
        }
        return descriptor
    }

    #if DEBUG
        /// Tests only, in debug builds: when `RECORDKEEPER_TEST_IMPORT_GATE` names a FIFO, the
        /// write pass opens it and reads it to its end, inside its transaction, before reading
        /// the input: the handshake that lets a test stop an import while it writes.
        private static func waitAtTestGate() {
            guard let gate = ProcessInfo.processInfo.environment["RECORDKEEPER_TEST_IMPORT_GATE"],
                let reader = try? ByteReader(path: gate)
            else { return }
            var byte = [UInt8](repeating: 0, count: 1)
            while (try? reader.read(into: &byte, 0..<1)) ?? 0 > 0 {}
        }
    #endif

    static func removeTemporaryFile(_ path: String) {
        guard SystemCalls.removeFile(path) else {
            StandardError.writeLine("recordkeeper: warning: could not remove the temporary file \(path): "
                                    + SystemCalls.lastErrorMessage)
            return
        }
    }
}
