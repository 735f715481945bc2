import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `recordkeeper-bench cli-roundtrip [--n N] [--keep]`: imports N small records into a new
/// store with the `recordkeeper` tool, exports them again, checks the export equals the input
/// byte for byte, and reports each step's time and the tool's peak resident memory
/// (`ru_maxrss` of that child process alone, from `wait4`).
///
/// The tool must have been built next to the bench (`swift build -c release` builds both).
enum CLIRoundTrip {
    struct Step {
        let name: String
        let seconds: Double
        let peakMB: Double
    }

    static func main(_ arguments: [String]) -> Int32 {
        var n = 1_000_000
        var keep = false
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--n":
                guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 else {
                    progress("cli-roundtrip: --n needs a positive integer")
                    return 64
                }
                n = value
                index += 1
            case "--keep": keep = true
            default:
                progress("cli-roundtrip: unknown argument \(arguments[index]) (usage: cli-roundtrip [--n N] [--keep])")
                return 64
            }
            index += 1
        }
        do {
            let steps = try run(n: n, keep: keep)
            print("cli-roundtrip  N=\(n)")
            print("step      time_s   records_per_s  peak_rss_mb")
            for step in steps {
                let rate = Double(n) / step.seconds
                print(
                    step.name.padding(toLength: 8, withPad: " ", startingAt: 0)
                        + String(format: "  %7.2f  %13.0f  %11.1f", step.seconds, rate, step.peakMB))
            }
            print("export == input: yes")
            return 0
        } catch {
            progress("cli-roundtrip: \(error)")
            return 1
        }
    }

    static func run(n: Int, keep: Bool) throws -> [Step] {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let tool = executable.deletingLastPathComponent().appendingPathComponent("recordkeeper").path
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw BenchFailure("no recordkeeper tool at \(tool); run `swift build -c release` first")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rk-cli-roundtrip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer {
            if keep {
                progress("cli-roundtrip: kept \(directory.path)")
            } else {
                do { try FileManager.default.removeItem(at: directory) } catch {
                    progress("cli-roundtrip: could not remove \(directory.path): \(error)")
                }
            }
        }
        let input = directory.appendingPathComponent("input.ndjson").path
        let output = directory.appendingPathComponent("output.ndjson").path
        let store = directory.appendingPathComponent("store.sqlite").path
        try writeInput(path: input, n: n)

        let importStep = try measure("import", tool, ["--store", store, "--quiet", "import", input])
        let exportStep = try measure(
            "export", tool, ["--store", store, "--quiet", "export", "--format", "ndjson", "--output", output])
        guard FileManager.default.contentsEqual(atPath: input, andPath: output) else {
            throw BenchFailure("the export differs from the input (both kept in \(directory.path))")
        }
        return [importStep, exportStep]
    }

    /// NDJSON in the tool's export format: the collection line, then one line per record in
    /// key order, values as compact JSON (about 100 bytes each).
    private static func writeInput(path: String, n: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw BenchFailure("cannot create \(path)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        var buffer = Data("{\"collection\":\"items\"}\n".utf8)
        for number in 0..<n {
            let key = String(format: "k%07d", number)
            let line =
                "{\"collection\":\"items\",\"key\":\"\(key)\",\"value\":{\"count\":\(number % 997),"
                + "\"id\":\"\(key)\",\"title\":\"Item number \(number) of the benchmark\","
                + "\"updated\":\(1_700_000_000 + number)}}\n"
            buffer.append(contentsOf: line.utf8)
            if buffer.count >= 1 << 20 {
                try handle.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try handle.write(contentsOf: buffer)
        try handle.close()
    }

    /// Runs the tool and waits for it with `wait4`, which reports that child's own peak RSS.
    private static func measure(_ name: String, _ tool: String, _ arguments: [String]) throws -> Step {
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let clock = ContinuousClock()
        let start = clock.now
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, tool, nil, nil, argv, environ)
        guard spawned == 0 else { throw BenchFailure("cannot start \(tool): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        guard wait4(pid, &status, 0, &usage) == pid else {
            throw BenchFailure("wait4 failed: \(String(cString: strerror(errno)))")
        }
        let elapsed = clock.now - start
        // WIFEXITED and WEXITSTATUS, spelled out: Swift does not import the macros.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw BenchFailure("recordkeeper \(arguments.joined(separator: " ")) failed (status \(status))")
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Step(
            name: name, seconds: seconds,
            peakMB: Double(ProcessMemory.bytes(maxResidentSetSize: Int(usage.ru_maxrss))) / 1_048_576)
    }
}
