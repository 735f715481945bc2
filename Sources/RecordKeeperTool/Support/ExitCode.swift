/// The tool's exit codes, from BSD `sysexits.h`; docs/CLI.md lists them for scripts.
enum ExitCode: Int32, Sendable {
    /// Success.
    case ok = 0
    /// The command line was wrong: unknown command or option, missing argument.
    case usage = 64
    /// Input data was wrong: malformed JSON, a bad change set, invalid base64, or a store that
    /// failed `check`.
    case dataError = 65
    /// Something named does not exist: the store file, an input file, a collection or record
    /// to read. (A record to delete that is not stored is not an error: `delete` says so.)
    case notFound = 66
    /// The store file was refused: not a database, another application's database, a newer
    /// format, or damaged. It was left unchanged.
    case storeRefused = 69
    /// A bug or an unexpected failure inside the tool or the library.
    case internalError = 70
    /// An output file cannot be created: it exists (without `--overwrite`), or is the store
    /// itself. It was left unchanged.
    case cannotCreate = 73
    /// Reading or writing a file failed (permissions, disk full, read-only store).
    case ioError = 74
    /// The store stayed locked by another process past the busy timeout; try again.
    case conflict = 75
    /// The sync server refused the credentials (a role that does not exist, a wrong or
    /// missing password, no permission to connect); trying again does not help.
    case noPermission = 77
    /// The sync server settings are wrong (a conninfo libpq cannot read or refuses, a database
    /// that does not exist, TLS required but not offered); trying again does not help.
    case configuration = 78
}

/// A failure the tool reports as one line on stderr and an exit code.
struct ToolError: Error, Sendable {
    let exitCode: ExitCode
    let message: String

    init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }
}
