import RecordKeeper
import RecordKeeperCommandLine

/// The `recordkeeper` command-line tool, as a library so tests can reach its parts.
///
/// `main.swift` of the `recordkeeper` executable only calls ``run(arguments:environment:)``
/// and exits with the code it returns.
public enum RecordKeeperTool {
    /// Runs one command line given as the bytes of each argument (without the program name),
    /// as `main` receives them: an argument that is not valid UTF-8 is refused (exit 65) with a
    /// message naming it, before anything is opened.
    public static func run(rawArguments: [[UInt8]], environment: [String: String]) async -> Int32 {
        switch ArgumentEncoding.decode(rawArguments) {
        case .success(let arguments):
            return await run(arguments: arguments, environment: environment)
        case .failure(let error):
            return report(error, command: nil).rawValue
        }
    }

    /// Runs one command line (without the program name) and returns the exit code.
    /// Output goes to stdout, messages and progress to stderr.
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        let output = ByteWriter.standardOutput()
        let opened = OpenedStores()
        let written = WriteNote()
        var command: String?
        do {
            let parsed = try ArgumentParser.parse(
                arguments, globalOptions: CommandCatalog.globalOptions, commands: CommandCatalog.commands)
            command = parsed.command
            let code = try await dispatch(parsed, environment: environment, output: output, opened: opened, written: written)
            await opened.closeAll()
            try output.flush()
            return code.rawValue
        } catch {
            await opened.closeAll(after: error)
            do {
                try output.flush()
            } catch let flushError {
                report(written.explaining(flushError, command: command), command: command)
            }
            return report(written.explaining(error, command: command), command: command).rawValue
        }
    }

    private static func dispatch(
        _ parsed: ParsedCommandLine, environment: [String: String], output: ByteWriter, opened: OpenedStores,
        written: WriteNote
    ) async throws -> ExitCode {
        guard let command = parsed.command else {
            if parsed.wantsHelp {
                try output.write(CommandCatalog.toolHelp)
                return .ok
            }
            throw UsageError(message: "no command given", command: nil)
        }
        if command == "help" {
            if let topic = parsed.positionals.first {
                guard let spec = CommandCatalog.spec(named: topic) else {
                    throw UsageError(message: "unknown command '\(topic)'", command: nil)
                }
                try output.write(CommandCatalog.help(for: spec))
            } else {
                try output.write(CommandCatalog.toolHelp)
            }
            return .ok
        }
        if parsed.wantsHelp, let spec = CommandCatalog.spec(named: command) {
            try output.write(CommandCatalog.help(for: spec))
            return .ok
        }
        let context = CommandContext(
            arguments: parsed,
            store: try StoreAccess.resolve(option: parsed.values["store"], environment: environment, opened: opened),
            quiet: parsed.has("quiet"),
            output: output,
            environment: environment,
            written: written)
        switch command {
        case "collections": return try await ReadCommands.collections(context)
        case "list":
            if QueryCommands.isQuery(context) { return try await QueryCommands.list(context) }
            return try await ReadCommands.list(context)
        case "index": return try await QueryCommands.index(context)
        case "get": return try await ReadCommands.get(context)
        case "put": return try await WriteCommands.put(context)
        case "delete": return try await WriteCommands.delete(context)
        case "apply": return try await ApplyCommand.run(context)
        case "export": return try await ExportCommand.run(context)
        case "import": return try await ImportCommand.run(context)
        case "check": return try await StoreCommands.check(context)
        case "info": return try await StoreCommands.info(context)
        case "backup": return try await BackupCommand.run(context)
        case "sync": return try await SyncCommand.run(context)
        case "conflicts": return try await ConflictCommands.list(context)
        case "resolve": return try await ConflictCommands.resolve(context)
        default: throw ToolError(.internalError, "command '\(command)' is declared but not implemented")
        }
    }

    /// Prints one line for `error` on stderr and returns its exit code.
    @discardableResult
    private static func report(_ error: any Error, command: String?) -> ExitCode {
        let failure = ToolError.reporting(error, tool: "recordkeeper", command: command) { error in
            switch error {
            case let error as RecordStoreError:
                return ToolError(error)
            case let error as SyncError:
                return ToolError(error, pending: nil, touched: false)
            case let error as QueryError:
                return ToolError(.usage, error.description)
            case let conflict as RecordConflict:
                return ToolError(.conflict, conflict.errorDescription ?? "records changed meanwhile; nothing was written")
            case is CancellationError:
                return ToolError(.internalError, "cancelled; nothing partial was written")
            default:
                return nil
            }
        }
        StandardError.writeLine(failure.line(tool: "recordkeeper"))
        return failure.exitCode
    }
}

/// What every command receives.
struct CommandContext {
    let arguments: ParsedCommandLine
    let store: StoreAccess
    let quiet: Bool
    let output: ByteWriter
    /// The tool's environment (tests pass their own).
    let environment: [String: String]
    /// Set by a command once its write committed, before it prints what it did.
    let written: WriteNote

    func positional(_ index: Int) -> String {
        arguments.positionals[index]
    }

    /// A collection name or key from the command line; empty ones are a usage error.
    func name(_ index: Int, _ what: String) throws(UsageError) -> String {
        let value = arguments.positionals[index]
        guard !value.isEmpty else {
            throw UsageError(message: "the \(what) must not be empty", command: arguments.command)
        }
        return value
    }
}

/// Whether the command's write committed: then a failure to write its output (a closed pipe,
/// a full disk behind standard output) must not read as a failed write, which a script would
/// retry or undo.
final class WriteNote: Sendable {
    private let committed = Protected(false)

    /// The command's write committed; what it prints from here on only reports it.
    func set() { committed.withLock { $0 = true } }

    /// `error`, saying that the write was kept when it is a failure to write standard output
    /// after the command's write committed.
    func explaining(_ error: any Error, command: String?) -> any Error {
        guard committed.withLock({ $0 }), let failure = error as? ToolError, failure.exitCode == .ioError,
            failure.message.hasPrefix("cannot write to standard output")
        else { return error }
        return ToolError(
            .ioError,
            failure.message + "; the \(command ?? "command")'s write was committed and is kept: only its output was lost")
    }
}
