/// The exit codes of `recordkeeper-relay`, from BSD `sysexits.h` (as `recordkeeper`'s).
public enum RelayExitCode: Int32, Sendable {
    case ok = 0
    /// The command line was wrong.
    case usage = 64
    /// A file named (secret, key, certificate) does not exist or cannot be read.
    case notFound = 66
    /// The database cannot be reached.
    case unavailable = 69
    /// A bug or an unexpected failure.
    case internalError = 70
    /// The configuration cannot be used: a short secret, a key that is not one, an address in
    /// use, a newer schema.
    case configuration = 78
}

/// A failure the tool reports as one line on standard error and an exit code.
struct RelayToolError: Error, Sendable {
    let exitCode: RelayExitCode
    let message: String

    init(_ exitCode: RelayExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }
}
