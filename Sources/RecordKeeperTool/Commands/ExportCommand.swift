import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `export [COLLECTION]`: one consistent snapshot streamed as JSON or NDJSON.
enum ExportCommand {
    enum Format: String, Sendable {
        case json
        case ndjson
    }

    static func run(_ context: CommandContext) async throws -> ExitCode {
        let collection: String? = context.arguments.positionals.isEmpty ? nil : try context.name(0, "collection name")
        // `-` is standard output, as everywhere else in the tool (a file named `-`: `./-`).
        let outputPath = context.arguments.values["output"].flatMap { $0 == "-" ? nil : $0 }
        let format = try resolveFormat(context.arguments.values["format"], outputPath: outputPath)
        let showProgress = ProgressReporter.shouldShow(quiet: context.quiet)
        let store = try context.store.existingStore()
        if let outputPath { try checkDestination(outputPath, storePath: context.store.path) }
        // A file export is written next to its destination (a new file, 0600, or the mode of
        // the file it replaces) and renamed into place at the end, so a failed or interrupted
        // export never leaves a partial file under the requested name, nor one beside it.
        let temporaryPath = outputPath.map {
            "\($0).partial-\(SystemCalls.processIdentifier)-\(UUID().uuidString.prefix(8))"
        }
        let keptMode = outputPath.flatMap(SystemCalls.permissions)
        try context.output.flush()
        let exported: Int
        let interruption = temporaryPath.map { _ in Interruption(activity: "stopping the export; no file is written") }
        defer { interruption?.end() }
        do {
            let export: @Sendable () async throws -> Int = {
                try await store.snapshot { snapshot in
                    try write(snapshot, collection: collection, format: format, to: temporaryPath,
                              mode: keptMode, showProgress: showProgress)
                }
            }
            if let interruption {
                exported = try await interruption.run(export)
            } else {
                exported = try await export()
            }
        } catch {
            if let temporaryPath, FileManager.default.fileExists(atPath: temporaryPath) {
                ImportCommand.removeTemporaryFile(temporaryPath)
            }
            interruption?.reraiseIfReceived()
            throw error
        }
        if let temporaryPath, let outputPath {
            guard SystemCalls.renameReplacing(temporaryPath, outputPath) else {
                let reason = SystemCalls.lastErrorMessage
                ImportCommand.removeTemporaryFile(temporaryPath)
                throw ToolError(.ioError, "cannot move the export to \(outputPath): \(reason)")
            }
            // The file's data was synced before the rename; the rename itself is durable once
            // the directory is (before, a power loss after "exported" could leave the old file).
            let directory = (outputPath as NSString).deletingLastPathComponent
            guard FileSync.synchronizeDirectory(directory.isEmpty ? "." : directory) else {
                throw ToolError(.ioError, "the export is at \(outputPath), but its directory could not be synced to "
                    + "disk: \(SystemCalls.lastErrorMessage); a power loss now could lose the rename")
            }
            if !context.quiet {
                try context.output.write("exported \(exported) records to \(outputPath)\n")
            }
        }
        return .ok
    }

    /// Refuses an `--output` the final rename would wreck: anything but a regular file (it
    /// would become one: a device, a FIFO, a symbolic link) and the store's own files.
    static func checkDestination(_ output: String, storePath: String) throws {
        guard !output.isEmpty else { throw UsageError(message: "--output needs a file path", command: "export") }
        if let kind = FileKind.nonRegular(at: output) {
            throw ToolError(.cannotCreate, "\(output) is \(kind), not a regular file, and was left as it is: an export "
                + "replaces the file at --output; give the path of a file, or leave out --output to write to standard output")
        }
        if let file = FileKind.storeFile(output, storePath: storePath) {
            throw ToolError(.cannotCreate, "\(output) is the store's own \(file); it was left as it is: export to another path")
        }
    }

    static func resolveFormat(_ option: String?, outputPath: String?) throws(UsageError) -> Format {
        if let option {
            guard let format = Format(rawValue: option.lowercased()) else {
                throw UsageError(message: "unknown format '\(option)'; use json or ndjson", command: "export")
            }
            return format
        }
        if let extensionName = outputPath.map({ URL(fileURLWithPath: $0).pathExtension.lowercased() }),
            extensionName == "ndjson" || extensionName == "jsonl"
        {
            return .ndjson
        }
        return .json
    }

    /// Writes the export inside the snapshot body; returns the number of records.
    private static func write(
        _ snapshot: RecordSnapshot, collection: String?, format: Format, to path: String?, mode: mode_t?,
        showProgress: Bool
    ) throws -> Int {
        let names: [String]
        if let collection {
            // Only this collection is read, so a damaged page elsewhere in the file does not
            // stop its export (docs/BACKUP.md: export what still reads, collection by collection).
            guard try snapshot.isEstablished(collection) else {
                throw ToolError(.notFound, "no collection \(quoted(collection)) in the store")
            }
            names = [collection]
        } else {
            names = try snapshot.collections().map(\.name)
        }

        let descriptor: Int32
        if let path {
            descriptor = SystemCalls.createPrivate(path)
            guard descriptor >= 0 else {
                // `path` is the temporary file next to the output: name the directory, which is
                // what the person can change, as a store's unwritable directory is named.
                let number = SystemCalls.lastErrorNumber, reason = SystemCalls.lastErrorMessage
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
                if [EACCES, EPERM, EROFS].contains(number) {
                    throw ToolError(
                        .ioError, "cannot write the export: the directory \(directory.isEmpty ? "." : directory) is not "
                            + "writable (\(reason)); choose another --output")
                }
                throw ToolError(.ioError, "cannot create \(path): \(reason)")
            }
            // The file it replaces keeps its mode: never wider (nor narrower) than it was.
            if let mode, !SystemCalls.setPermissions(descriptor, mode) {
                let reason = SystemCalls.lastErrorMessage
                _ = SystemCalls.closeDescriptor(descriptor)
                throw ToolError(.ioError, "cannot give \(path) the mode of the file it replaces: \(reason)")
            }
        } else {
            descriptor = SystemCalls.standardOutput
        }
        let output = ByteWriter(descriptor: descriptor, name: path ?? "standard output")
        let progress = ProgressReporter(verb: "exported", isEnabled: showProgress)
        defer { progress.finish() }
        do {
            switch format {
            case .json: try writeJSON(snapshot, names: names, to: output, progress: progress)
            case .ndjson: try writeNDJSON(snapshot, names: names, to: output, progress: progress)
            }
            try output.flush()
            // A damaged page can end a walk of the records early without an error; the table's
            // own count says whether every record was read (whole-store exports only: one
            // collection's records have no count of their own).
            if collection == nil {
                let counted = try snapshot.recordCountOfAllCollections()
                if counted != progress.count {
                    throw ToolError(
                        .unavailable,
                        "the store is damaged: it counts \(counted) records, but \(progress.count) could be read; "
                            + (path == nil ? "the export above is incomplete. " : "nothing was written. ")
                            + "Run `recordkeeper check`, and export what still reads collection by collection "
                            + "(docs/BACKUP.md, \"A damaged store\")")
                }
            }
        } catch {
            if path != nil {
                _ = SystemCalls.closeDescriptor(descriptor)  // The write error is the one to report.
            }
            throw error
        }
        if let path {
            guard SystemCalls.fileSync(descriptor), SystemCalls.closeDescriptor(descriptor) == 0 else {
                throw ToolError(.ioError, "cannot write \(path): \(SystemCalls.lastErrorMessage)")
            }
        }
        return progress.count
    }

    /// ```
    /// {
    ///   "collections": {
    ///     "NAME": {
    ///       "KEY": VALUE,
    ///       ...
    ///     }
    ///   }
    /// }
    /// ```
    private static func writeJSON(
        _ snapshot: RecordSnapshot, names: [String], to output: ByteWriter, progress: ProgressReporter
    ) throws {
        try output.write("{\n  \"collections\": {")
        for (index, name) in names.enumerated() {
            try output.write(index == 0 ? "\n    " : ",\n    ")
            try output.write(JSONText.quoted(name))
            try output.write(": {")
            var first = true
            try snapshot.forEachRecord(in: name) { record in
                try output.write(first ? "\n      " : ",\n      ")
                first = false
                try output.write(JSONText.quoted(record.key))
                try output.write(": ")
                try output.write(PayloadCoding.exportJSON(for: record.data))
                progress.advance()
            }
            try output.write(first ? "}" : "\n    }")
        }
        try output.write(names.isEmpty ? "}\n}\n" : "\n  }\n}\n")
    }

    /// One line per collection (`{"collection":NAME}`), then one per record
    /// (`{"collection":NAME,"key":KEY,"value":VALUE}`).
    private static func writeNDJSON(
        _ snapshot: RecordSnapshot, names: [String], to output: ByteWriter, progress: ProgressReporter
    ) throws {
        for name in names {
            let prefix = Array("{\"collection\":".utf8) + JSONText.quoted(name)
            try output.write(prefix)
            try output.write("}\n")
            let recordPrefix = prefix + Array(",\"key\":".utf8)
            try snapshot.forEachRecord(in: name) { record in
                try output.write(recordPrefix)
                try output.write(JSONText.quoted(record.key))
                try output.write(",\"value\":")
                try output.write(PayloadCoding.exportJSON(for: record.data))
                try output.write("}\n")
                progress.advance()
            }
        }
    }
}
