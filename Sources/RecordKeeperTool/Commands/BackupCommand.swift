import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `backup DEST [--overwrite]`: a consistent copy of the whole store in one file
/// (`RecordStore.backup(to:overwrite:)`), taken while other processes may keep writing.
enum BackupCommand {
    static func run(_ context: CommandContext) async throws -> ExitCode {
        let destination = try context.name(0, "destination")
        let overwrite = context.arguments.has("overwrite")
        // Only a regular file other than the store's is one --overwrite replaces: a directory,
        // a link, a device or the store's own file (or its -wal, -shm…) is refused below
        // whatever the options, in the library's words.
        let isOtherRegularFile = FileManager.default.fileExists(atPath: destination)
            && FileKind.nonRegular(at: destination) == nil
            && FileKind.storeFile(destination, storePath: context.store.path) == nil
        if !overwrite, isOtherRegularFile {
            throw ToolError(.cannotCreate, "\(destination) already exists; it was left as it is "
                            + "(give --overwrite to replace it)")
        }
        let store = try context.store.existingStore()
        // SIGINT, SIGTERM or SIGHUP stops the copy; the library removes its temporary file,
        // and then the tool dies of the signal.
        let interruption = Interruption(activity: "stopping the backup; nothing is written at \(destination)")
        defer { interruption.end() }
        do {
            try await interruption.run {
                try await store.backup(to: URL(fileURLWithPath: destination), overwrite: overwrite)
            }
        } catch let error as RecordStoreError where error.operation == .backup && error.code == .invalidArgument {
            // The destination is refused: it appeared meanwhile, is the store itself, a
            // directory, or has a store's write-ahead log next to it.
            throw ToolError(.cannotCreate, error.errorDescription ?? error.description)
        } catch {
            interruption.reraiseIfReceived()
            throw error
        }
        if interruption.signalReceived != nil {
            // The signal came while the finished copy was being moved into place.
            StandardError.writeLine("recordkeeper: the backup was complete when it was interrupted; it is kept at \(destination)")
        }
        if !context.quiet {
            try context.output.write("backed up \(context.store.path) to \(destination)\n")
        }
        return .ok
    }
}
