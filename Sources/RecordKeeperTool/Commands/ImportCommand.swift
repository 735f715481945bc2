import Foundation
import RecordKeeper

/// `import FILE|-`: merge (default) or `--replace`, all or nothing; `--dry-run` only counts.
///
/// - Dry run: one pass over the input against a read snapshot; the store is never created.
/// - Merge: one pass inside one write transaction, comparing each record with the stored one.
/// - Replace, or a store that does not exist yet: a counting pass first (snapshot, or no store
///   at all), then the writing pass; standard input is first copied to a temporary file so it
///   can be read twice.
/// Malformed input fails its pass before anything commits, so nothing is written.
enum ImportCommand {
    static func run(_ context: CommandContext) async throws -> ExitCode {
        let file = context.positional(0)
        let replace = context.arguments.has("replace")
        let dryRun = context.arguments.has("dry-run")
        let showProgress = ProgressReporter.shouldShow(quiet: context.quiet)
        if file != "-" {
            // Report a missing input before touching the store.
            _ = try ByteReader(path: file)
        }

        if dryRun {
            let counts = try await plan(file, store: context.store, replace: replace, showProgress: showProgress)
            try context.output.write("dry run: would add \(counts.added), change \(counts.changed) and remove "
                                     + "\(counts.removed) records (\(counts.unchanged) unchanged) in "
                                     + "\(counts.collections) collections; nothing was written"
                                     + (try context.store.holdsStore ? "" : " (no store at \(context.store.path) yet; import creates it)")
                                     + "\n")
            return .ok
        }

        // Replace needs counts from before the write; a missing store must not be created for
        // input that turns out malformed. Both read the input once before writing, so standard
        // input is first copied to a temporary file.
        let needsFirstPass = try replace || !context.store.holdsStore
        let spooled: String? = needsFirstPass && file == "-" ? try spoolStandardInput() : nil
        let source = spooled ?? file
        defer {
            if let spooled { removeTemporaryFile(spooled) }
        }

        var counts = ImportCounts()
        if needsFirstPass {
            counts = try await plan(source, store: context.store, replace: replace, showProgress: showProgress)
        }
        let store = try context.store.writableStore()
        let written = try await store.write { transaction in
            let applier = ImportApplier(transaction: transaction, replace: replace, classify: !needsFirstPass)
            let progress = ProgressReporter(verb: "imported", isEnabled: showProgress)
            defer { progress.finish() }
            try readDocument(source, into: applier, progress: progress, foundationCheck: !needsFirstPass)
            return try applier.finish()
        }
        if !needsFirstPass { counts = written }
        if !context.quiet {
            try context.output.write("imported \(counts.collections) collections: added \(counts.added), changed "
                                     + "\(counts.changed), removed \(counts.removed), unchanged \(counts.unchanged)\n")
        }
        return .ok
    }

    /// Counts what importing `source` would do, without writing and without creating a store.
    private static func plan(
        _ source: String, store access: StoreAccess, replace: Bool, showProgress: Bool
    ) async throws -> ImportCounts {
        guard try access.holdsStore else {
            let planner = ImportPlanner(lookup: { _, _ in nil }, storedCounts: [:], replace: replace)
            let progress = ProgressReporter(verb: "checked", isEnabled: showProgress)
            defer { progress.finish() }
            try readDocument(source, into: planner, progress: progress)
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
            try readDocument(source, into: planner, progress: progress)
            return planner.finish()
        }
    }

    /// Reads the whole input into `visitor`; malformed input becomes one exit-65 message.
    private static func readDocument(_ source: String, into visitor: any ImportVisitor,
                                      progress: ProgressReporter, foundationCheck: Bool = true) throws {
        let reader = source == "-" ? ByteReader(standardInput: ()) : try ByteReader(path: source)
        do {
            try ImportDocument.read(reader, into: visitor, progress: progress, foundationCheck: foundationCheck)
        } catch let error as JSONSyntaxError {
            progress.finish()
            throw ToolError(.dataError, "\(reader.name): line \(error.line), column \(error.column): "
                            + "\(error.message); nothing was written")
        }
    }

    /// Copies standard input to a new temporary file (constant memory) and returns its path.
    private static func spoolStandardInput() throws(ToolError) -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("recordkeeper-import-\(SystemCalls.processIdentifier)-\(UUID().uuidString)")
            .path
        let descriptor = SystemCalls.createForWriting(path)
        guard descriptor >= 0 else {
            throw ToolError(.ioError, "cannot create a temporary file \(path): \(SystemCalls.lastErrorMessage)")
        }
        let writer = ByteWriter(descriptor: descriptor, name: path)
        let reader = ByteReader(standardInput: ())
        do {
            while let chunk = try reader.nextChunk() {
                try writer.write(chunk)
            }
            try writer.flush()
        } catch {
            _ = SystemCalls.closeDescriptor(descriptor)  // The write error is the one to report.
            removeTemporaryFile(path)
            throw error
        }
        guard SystemCalls.closeDescriptor(descriptor) == 0 else {
            removeTemporaryFile(path)
            throw ToolError(.ioError, "cannot write the temporary file \(path): \(SystemCalls.lastErrorMessage)")
        }
        return path
    }

    static func removeTemporaryFile(_ path: String) {
        guard SystemCalls.removeFile(path) else {
            StandardError.writeLine("recordkeeper: warning: could not remove the temporary file \(path): "
                                    + SystemCalls.lastErrorMessage)
            return
        }
    }
}
