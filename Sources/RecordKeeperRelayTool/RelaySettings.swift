import Foundation
import RecordKeeperCommandLine

/// The options of one command line, with the environment as fallback, read and checked.
struct RelaySettings {
    let arguments: ParsedCommandLine
    let environment: [String: String]

    /// The option's value, else the environment variable's (when one is named).
    func value(_ option: String, environment name: String? = nil) -> String? {
        if let value = arguments.values[option] { return value }
        if let name, let value = environment[name], !value.isEmpty { return value }
        return nil
    }

    func required(_ option: String, environment name: String? = nil) throws(UsageError) -> String {
        guard let value = value(option, environment: name) else {
            let also = name.map { " (or \($0))" } ?? ""
            throw UsageError(message: "\(arguments.command ?? "") needs --\(option)\(also)", command: arguments.command)
        }
        return value
    }

    /// A whole number option within `range`, or `defaultValue` when absent.
    func integer(_ option: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(option) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                message: "--\(option) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'",
                command: arguments.command)
        }
        return number
    }

    /// A duration in seconds (`90`), or with a unit (`90s`, `15m`, `1h`, `7d`).
    func seconds(
        _ option: String, environment name: String? = nil, default defaultValue: Int?, minimum: Int = 0
    ) throws(UsageError) -> Int? {
        guard let text = value(option, environment: name) else { return defaultValue }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var unit = 1
        if let last = text.last, let factor = units[last] {
            digits = digits.dropLast()
            unit = factor
        }
        // The minimum is in seconds, whatever unit the value was given in.
        guard let number = Int(digits), number <= Int(Int32.max) / unit, number * unit >= minimum else {
            throw UsageError(
                message: "--\(option) takes seconds (or a number with s, m, h or d), at least \(minimum), not '\(text)'",
                command: arguments.command)
        }
        return number * unit
    }

    /// The bytes of a file the operator names (a secret, a key).
    func file(_ path: String, _ what: String) throws(RelayToolError) -> Data {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RelayToolError(.notFound, "the \(what) \(path) does not exist")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw RelayToolError(.notFound, "cannot read the \(what) \(path): \(error.localizedDescription)")
        }
    }

    /// An HS256 secret: the file's bytes without trailing newlines.
    func secret(_ path: String) throws(RelayToolError) -> [UInt8] {
        var bytes = Array(try file(path, "secret file"))
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
        return bytes
    }
}
