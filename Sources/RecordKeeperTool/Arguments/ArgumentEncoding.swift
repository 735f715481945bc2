import RecordKeeperCoding
import RecordKeeperCommandLine

/// Command-line arguments arrive as bytes. Swift's `CommandLine.arguments` replaces bytes that
/// are not UTF-8 with U+FFFD, so `put notes $'a\xff'` and `put notes $'a\xfe'` would write one
/// record. The tool reads the raw bytes instead and refuses such an argument, naming it.
enum ArgumentEncoding {
    /// The arguments decoded, or the error naming the first one that is not valid UTF-8.
    static func decode(_ raw: [[UInt8]]) -> Result<[String], ToolError> {
        var decoded: [String] = []
        var invalid: [Int] = []
        for (index, bytes) in raw.enumerated() {
            if let text = StrictUTF8.string(bytes) {
                decoded.append(text)
            } else {
                invalid.append(index)
                decoded.append(marker(index))
            }
        }
        guard let first = invalid.first else { return .success(decoded) }
        let role = self.role(of: first, in: decoded)
        return .failure(ToolError(
            .dataError,
            "\(role) is not valid UTF-8 (\(escaped(raw[first]))); collection names, keys, values and "
                + "paths on the command line must be UTF-8; nothing was written"))
    }

    /// A placeholder the parser treats as an ordinary argument, to find where it ended up.
    private static func marker(_ index: Int) -> String { "\u{FFFF}argument-\(index)" }

    /// "the KEY argument", "the value of --store", or "argument 3" when the line does not parse.
    private static func role(of index: Int, in arguments: [String]) -> String {
        let marker = marker(index)
        let position = "argument \(index + 1)"
        guard
            let parsed = try? ArgumentParser.parse(
                arguments, globalOptions: CommandCatalog.globalOptions, commands: CommandCatalog.commands)
        else { return position }
        if let option = parsed.values.first(where: { $0.value == marker })?.key {
            return "the value of --\(option) (\(position))"
        }
        if parsed.command == marker { return "the command (\(position))" }
        if let slot = parsed.positionals.firstIndex(of: marker), let command = parsed.command,
            let spec = CommandCatalog.spec(named: command), slot < spec.arguments.count
        {
            return "the \(spec.arguments[slot].name) argument (\(position))"
        }
        return position
    }

    /// The bytes as text, with every byte outside printable ASCII as `\xHH`.
    static func escaped(_ bytes: [UInt8]) -> String {
        var text = ""
        for byte in bytes {
            if byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return text
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
