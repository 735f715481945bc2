public import Foundation

/// Executables built beside the test bundle (`recordkeeper`, `learner`,
/// `recordkeeper-crashtest`), for tests that run them as subprocesses.
public enum BuildProducts {
    /// The executable `name`: the path in the environment variable `override` when it is set;
    /// else found by walking up from the test process's own path and from the loaded bundles
    /// (so it works with `swift test` and with any `--scratch-path`); else in `.build/debug`
    /// of this package. Nil when none is found.
    public static func executable(named name: String, override: String? = nil) -> URL? {
        if let override, let path = ProcessInfo.processInfo.environment[override] {
            return URL(fileURLWithPath: path)
        }
        var seeds: [URL] = [
            URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath(),
            Bundle.main.bundleURL,
        ]
        if let executable = Bundle.main.executableURL { seeds.append(executable) }
        seeds += Bundle.allBundles.map(\.bundleURL)
        for seed in seeds {
            var directory = seed.deletingLastPathComponent()
            for _ in 0..<6 {
                if let found = executableFile(directory.appendingPathComponent(name)) { return found }
                directory = directory.deletingLastPathComponent()
            }
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return executableFile(packageRoot.appendingPathComponent(".build/debug/\(name)"))
    }

    private static func executableFile(_ candidate: URL) -> URL? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
            !isDirectory.boolValue, FileManager.default.isExecutableFile(atPath: candidate.path)
        else { return nil }
        return candidate
    }
}
