import TestHelpers
import Foundation
import Testing

/// The output of one run of the `recordkeeper` binary.
struct ToolResult {
    let status: Int32
    let stdout: Data
    let stderr: String

    var output: String { String(decoding: stdout, as: UTF8.self) }
    var outputLines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLast(output.hasSuffix("\n") ? 1 : 0) }
}

/// Runs the built `recordkeeper` executable as a subprocess, in a working directory, with its
/// own environment (no inherited `RECORDKEEPER_STORE`). Output goes through files
/// (``ChildProcess``), so large outputs cannot deadlock on a pipe.
struct ToolRunner {
    let directory: URL
    var environment: [String: String] = [:]
    /// Runs the tool as this user and group (through `setpriv`, which `OtherUser` finds), to
    /// test a store as a person other than its owner sees it.
    var user: OtherUser?

    /// The built `recordkeeper` (`RECORDKEEPER_TOOL` overrides it).
    static let executable = BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_TOOL")

    init(directory: URL, environment: [String: String] = [:]) {
        self.directory = directory
        self.environment = environment
    }

    /// The store path tests pass with `--store`.
    var storePath: String { directory.appendingPathComponent("store.sqlite").path }

    /// Runs `arguments`, feeding `input` on stdin.
    @discardableResult
    func run(_ arguments: [String], input: Data = Data(), sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> ToolResult
    {
        let executable = try #require(Self.executable, "recordkeeper executable not found; build it first",
                                      sourceLocation: sourceLocation)
        var environment: [String: String?] = ["RECORDKEEPER_STORE": nil]
        for (name, value) in self.environment { environment[name] = value }
        let result =
            if let user {
                try await ChildProcess.run(
                    URL(fileURLWithPath: user.setpriv),
                    ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", executable.path] + arguments,
                    in: directory, environment: environment, input: input)
            } else {
                try await ChildProcess.run(executable, arguments, in: directory, environment: environment, input: input)
            }
        return ToolResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    /// Runs with `--store` pointing at this directory's store.
    @discardableResult
    func runOnStore(_ arguments: [String], input: Data = Data(), sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> ToolResult
    {
        try await run(arguments + ["--store", storePath], input: input, sourceLocation: sourceLocation)
    }

    /// Writes a file in the directory and returns its path.
    func file(_ name: String, _ contents: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(contents.utf8).write(to: url)
        return url.path
    }
}

/// Runs `body` with a runner in a fresh temporary directory.
func withTool<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (ToolRunner) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { try await body(ToolRunner(directory: $0)) }
}

/// A user other than the tests' (root's), to run the tool as: `nobody` through `setpriv`.
struct OtherUser {
    let setpriv: String
    let uid: UInt32
    let gid: UInt32

    /// `nobody`, when the tests run as root and `setpriv` is installed; nil otherwise.
    static let nobody: OtherUser? = {
        guard getuid() == 0,
            let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let entry = getpwnam("nobody")
        else { return nil }
        return OtherUser(setpriv: setpriv, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }()

    static let unavailableReason: Comment = "needs root and setpriv to run the tool as another user (nobody)"
}
