import Foundation
import RecordKeeperTestSupport
import Testing

/// The `recordkeeper-relay` executable, run as a process.
struct RelayProcess {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func executable() throws -> URL {
        guard let url = BuildProducts.executable(named: "recordkeeper-relay", override: "RECORDKEEPER_RELAY_BINARY") else {
            throw Failure(description: "recordkeeper-relay is not built (swift build --build-tests)")
        }
        return url
    }

    /// Runs a command to its end: exit status, standard output, standard error.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws
        -> (status: Int32, output: String, error: String)
    {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        return await onOwnThread {
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = error.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }
    }

    let process: Process
    /// Where the relay said it listens (`http://127.0.0.1:PORT`).
    let url: String
    private let errors: Pipe

    /// Starts `recordkeeper-relay serve arguments` and waits for its "listening on" line.
    static func serve(_ arguments: [String]) async throws -> RelayProcess {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = ["serve"] + arguments
        process.environment = [:]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let line: String = await onOwnThread {
            var bytes = Data()
            while !bytes.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }  // the process ended
                bytes.append(chunk)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard let range = line.range(of: "listening on ") else {
            process.terminate()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure(description: "the relay did not start: \(line) \(message)")
        }
        let url = line[range.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)
        return RelayProcess(process: process, url: url, errors: errors)
    }

    /// Sends SIGTERM; returns the exit status and everything the relay wrote to stderr.
    func terminate() async -> (status: Int32, log: String) {
        process.terminate()
        let errors = errors
        let process = process
        return await onOwnThread {
            let log = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: log, as: UTF8.self))
        }
    }
}
