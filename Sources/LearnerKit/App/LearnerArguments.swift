/// The command line of `learner`, parsed: words, and `--name VALUE` / `--name=VALUE` / flag
/// options anywhere (`--` ends options). Deliberately tiny; the commands check what they got.
struct LearnerArguments: Equatable {
    var words: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    /// Options that take a value, and flags.
    static let valueOptions: Set<String> = ["store", "page", "title", "count"]
    static let flagOptions: Set<String> = ["help", "version"]

    static func parse(_ arguments: [String]) throws(LearnerError) -> LearnerArguments {
        var result = LearnerArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                result.words.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" {
                result.flags.insert("help")
                continue
            }
            guard argument.hasPrefix("--") else {
                throw LearnerError(.usage, "unknown option \(argument)")
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagOptions.contains(name) {
                guard inline == nil else { throw LearnerError(.usage, "option --\(name) takes no value") }
                result.flags.insert(name)
            } else if valueOptions.contains(name) {
                guard result.values[name] == nil else {
                    throw LearnerError(.usage, "option --\(name) is given twice; give it once")
                }
                if let inline {
                    result.values[name] = inline
                } else if index < arguments.count {
                    // `--store --help` is an option without its value, not a file named --help;
                    // a value that begins with -- is given inline (`--title=--x`).
                    let value = arguments[index]
                    guard !value.hasPrefix("--"), value != "-h" else {
                        throw LearnerError(.usage, "option --\(name) needs a value, not the option \(value); write --\(name)=\(value) for a value beginning with --")
                    }
                    result.values[name] = value
                    index += 1
                } else {
                    throw LearnerError(.usage, "option --\(name) needs a value")
                }
            } else {
                throw LearnerError(.usage, "unknown option --\(name)")
            }
        }
        return result
    }

    /// The value of `--name` as a positive integer, if given.
    func positiveInteger(_ name: String) throws(LearnerError) -> Int? {
        guard let text = values[name] else { return nil }
        if let number = Int(text), number > 0 { return number }
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), text.contains(where: { $0 != "0" }) {
            throw LearnerError(.usage, "--\(name) \(text) is too large; the largest is \(Int.max)")
        }
        throw LearnerError(.usage, "--\(name) needs a positive whole number, not '\(text)'")
    }
}
