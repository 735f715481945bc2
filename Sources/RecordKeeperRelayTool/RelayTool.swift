import Foundation
import RecordKeeperSync
import RecordKeeperCommandLine
import RecordKeeperPostgres

/// The `recordkeeper-relay` command line, as a library so tests can reach it.
///
/// `main.swift` of the executable only calls ``run(arguments:environment:)`` and exits with
/// the code it returns.
public enum RelayTool {
    /// Runs one command line (without the program name) and returns the exit code. Results go
    /// to standard output, messages and the request log to standard error.
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        var command: String?
        do {
            let parsed = try ArgumentParser.parse(
                arguments, globalOptions: RelayCommandCatalog.globalOptions, commands: RelayCommandCatalog.commands)
            command = parsed.command
            return try await dispatch(parsed, environment: environment).rawValue
        } catch {
            return report(error, command: command).rawValue
        }
    }

    private static func dispatch(_ parsed: ParsedCommandLine, environment: [String: String]) async throws -> ExitCode {
        guard let command = parsed.command else {
            if parsed.wantsHelp {
                StandardStreams.write(RelayCommandCatalog.toolHelp)
                return .ok
            }
            throw UsageError(message: "no command given", command: nil)
        }
        if command == "help" || parsed.wantsHelp {
            let topic = command == "help" ? parsed.positionals.first : command
            if let topic {
                guard let spec = RelayCommandCatalog.spec(named: topic) else {
                    throw UsageError(message: "unknown command '\(topic)'", command: nil)
                }
                StandardStreams.write(RelayCommandCatalog.help(for: spec))
            } else {
                StandardStreams.write(RelayCommandCatalog.toolHelp)
            }
            return .ok
        }
        let settings = RelaySettings(arguments: parsed, environment: environment)
        switch command {
        case "migrate": return try await MigrateCommand.run(settings)
        case "compact": return try await CompactCommand.run(settings)
        case "check": return try await CheckCommand.run(settings)
        case "serve": return try await ServeCommand.run(settings, until: TerminationSignal.wait)
        case "token": return try TokenCommand.run(settings)
        default: throw RelayToolError(.internalError, "command '\(command)' is declared but not implemented")
        }
    }

    /// Prints one line for `error` on standard error and returns its exit code.
    @discardableResult
    private static func report(_ error: any Error, command: String?) -> ExitCode {
        let failure = CommandFailure.reporting(error, tool: "recordkeeper-relay", command: command) { error in
            switch error {
            case let error as SyncError:
                let code: ExitCode =
                    switch error.code {
                    case .unreachable: .unavailable
                    case .newerServerSchema, .configuration, .authentication: .configuration
                    case .invalidRequest: .usage
                    default: .internalError
                    }
                return CommandFailure(code, error.description)
            case let error as PostgresError:
                return CommandFailure(error.isConnectionFailure ? .unavailable : .configuration, error.description)
            default:
                return nil
            }
        }
        StandardStreams.writeError(failure.line(tool: "recordkeeper-relay"))
        return failure.exitCode
    }
}

/// Writes to the process's standard output and error, unbuffered.
enum StandardStreams {
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func writeError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// SIGTERM and SIGINT, waited for without a thread.
enum TerminationSignal {
    /// Returns when the process receives SIGTERM or SIGINT (whose default action, ending the
    /// process at once, is turned off).
    static func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = DispatchQueue(label: "recordkeeper-relay.signals")
            queue.async {
                let waiter = Waiter(continuation: continuation)
                for number in [SIGTERM, SIGINT] {
                    signal(number, SIG_IGN)
                    let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                    source.setEventHandler { waiter.fire() }
                    source.resume()
                    waiter.sources.append(source)
                }
                // The sources' handlers hold the waiter, which holds the sources: they stay
                // for the life of the process, as the signal handling does.
            }
        }
    }

    /// The signal sources and the continuation they resume once.
    ///
    /// `@unchecked Sendable`: every property is touched only on the signals' serial queue.
    private final class Waiter: @unchecked Sendable {
        var sources: [any DispatchSourceSignal] = []
        private var continuation: CheckedContinuation<Void, Never>?

        init(continuation: CheckedContinuation<Void, Never>) {
            self.continuation = continuation
        }

        func fire() {
            continuation?.resume()
            continuation = nil
        }
    }
}
