/// The exit codes of the project's command-line tools (`recordkeeper`, `recordkeeper-relay`),
/// from BSD `sysexits.h`. docs/CLI.md and docs/RELAY.md say what each means for each tool.
package enum ExitCode: Int32, Sendable {
    /// Success.
    case ok = 0
    /// The command line was wrong: unknown command or option, missing or malformed argument.
    case usage = 64
    /// Input data was wrong: malformed JSON, a bad change set, invalid base64, a store that
    /// failed `check`.
    case dataError = 65
    /// Something named does not exist or cannot be opened: a store, an input file, a secret,
    /// a key, a collection or record to read.
    case notFound = 66
    /// A service or file the command needs is unavailable or was refused: the database does
    /// not answer (relay), the store is not one the tool can open (`recordkeeper`, as
    /// `storeRefused`).
    case unavailable = 69
    /// A bug or an unexpected failure inside the tool or the library.
    case internalError = 70
    /// An output file cannot be created: it exists, or it is the store itself.
    case cannotCreate = 73
    /// Reading or writing a file failed (permissions, disk full, read-only store).
    case ioError = 74
    /// A temporary failure (a store locked past the busy timeout): trying again may help.
    case temporaryFailure = 75
    /// Credentials were refused; trying again does not help.
    case noPermission = 77
    /// The configuration cannot be used: a conninfo libpq refuses, a short secret, an address
    /// in use, a newer schema.
    case configuration = 78
}

/// A failure a tool reports as one line on standard error and an exit code.
package struct CommandFailure: Error, Sendable {
    package let exitCode: ExitCode
    package let message: String

    package init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }
}

extension CommandFailure {
    /// The failure `tool` reports for `error`: a usage error points at the command's help, a
    /// `CommandFailure` stands as it is, anything else is what `translate` makes of it, or an
    /// internal error naming it when `translate` does not know it.
    package static func reporting(
        _ error: any Error, tool: String, command: String?,
        translate: (any Error) -> CommandFailure?
    ) -> CommandFailure {
        switch error {
        case let error as UsageError:
            let help = error.command.map { "\(tool) \($0) --help" } ?? "\(tool) --help"
            return CommandFailure(.usage, "\(error.message) (see '\(help)')")
        case let failure as CommandFailure:
            return failure
        default:
            return translate(error)
                ?? CommandFailure(.internalError, "internal error: \(String(describing: error))")
        }
    }

    /// The one line `tool` writes on standard error: `tool: message`, line breaks folded.
    package func line(tool: String) -> String {
        "\(tool): " + message.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
