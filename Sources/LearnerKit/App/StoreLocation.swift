import Foundation

/// Where the learner's store file is: `--store PATH`, else `LEARNER_STORE`, else
/// `learner.sqlite` in a per-user data directory: `$XDG_DATA_HOME/learner` (on every platform,
/// so a command-line user on macOS who sets it gets what they asked for), else
/// `~/.local/share/learner` on Linux and `Application Support/learner` on Apple platforms.
///
/// Nothing is created here: the store creates its file, and missing directories with `0700`,
/// when the first write needs them.
struct StoreLocation: Equatable {
    let path: String
    /// Where the path came from, for messages: `--store`, `LEARNER_STORE` or `default`.
    let source: String

    static let fileName = "learner.sqlite"

    static func resolve(option: String?, environment: [String: String]) throws(LearnerError) -> StoreLocation {
        if let option {
            guard !option.isEmpty else { throw LearnerError(.usage, "--store needs a path") }
            return StoreLocation(path: option, source: "--store")
        }
        if let variable = environment["LEARNER_STORE"] {
            guard !variable.isEmpty else { throw LearnerError(.usage, "LEARNER_STORE is set but empty") }
            return StoreLocation(path: variable, source: "LEARNER_STORE")
        }
        return StoreLocation(path: try defaultDirectory(environment: environment) + "/" + fileName, source: "default")
    }

    /// The per-user data directory of the app (not created).
    static func defaultDirectory(environment: [String: String]) throws(LearnerError) -> String {
        // XDG Base Directory: a relative XDG_DATA_HOME is invalid and ignored.
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/learner"
        }
        #if canImport(Darwin)
            guard let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first else {
                throw LearnerError(.ioError, "cannot find the Application Support directory; give --store PATH")
            }
            return support.appendingPathComponent("learner").path
        #else
            if let home = environment["HOME"], home.hasPrefix("/") {
                return home + "/.local/share/learner"
            }
            throw LearnerError(.ioError, "neither XDG_DATA_HOME nor HOME is set to an absolute path; give --store PATH or set LEARNER_STORE")
        #endif
    }

    var url: URL { URL(fileURLWithPath: path) }
}
