/// One option a command (or the tool as a whole) accepts: `--name` alone, or `--name VALUE`.
package struct OptionSpec: Sendable, Equatable {
    /// The long name without its leading dashes, such as `"store"`.
    package let name: String
    /// A one-letter alias such as `h` for `-h`, if any.
    package let shortName: Character?
    /// The placeholder shown in help (`PATH`) when the option takes a value; nil for a flag.
    package let valueName: String?
    /// One line for the help text.
    package let help: String
    /// Whether the option may be given more than once (`list --where`); any other option given
    /// twice is a usage error, never "the last one wins".
    package let repeats: Bool

    package init(name: String, shortName: Character?, valueName: String?, help: String, repeats: Bool = false) {
        self.name = name
        self.shortName = shortName
        self.valueName = valueName
        self.help = help
        self.repeats = repeats
    }

    package static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, shortName: short, valueName: nil, help: help)
    }

    package static func value(_ name: String, _ valueName: String, repeats: Bool = false, help: String) -> OptionSpec {
        OptionSpec(name: name, shortName: nil, valueName: valueName, help: help, repeats: repeats)
    }

    package var takesValue: Bool { valueName != nil }
}

/// A positional argument of a command, for arity checks and help.
package struct ArgumentSpec: Sendable, Equatable {
    package let name: String
    package let isOptional: Bool

    package init(name: String, isOptional: Bool) {
        self.name = name
        self.isOptional = isOptional
    }
}

/// The shape of one command: what the parser needs, plus the text `--help` prints.
package struct CommandSpec: Sendable {
    package let name: String
    package let arguments: [ArgumentSpec]
    package let options: [OptionSpec]
    package let summary: String
    package let discussion: String

    package init(
        name: String, arguments: [ArgumentSpec], options: [OptionSpec], summary: String, discussion: String
    ) {
        self.name = name
        self.arguments = arguments
        self.options = options
        self.summary = summary
        self.discussion = discussion
    }
}

/// What the parser understood from the command line.
package struct ParsedCommandLine: Equatable {
    /// The command name, or nil when none was given (`recordkeeper --help`).
    package var command: String?
    package var positionals: [String] = []
    /// Flags that were given, by long name.
    package var flags: Set<String> = []
    /// Options with a value, by long name (the last occurrence of one that repeats).
    package var values: [String: String] = [:]
    /// Every value of each option with a value, by long name, in command-line order (for
    /// options that may repeat, such as `list --where`).
    package var allValues: [String: [String]] = [:]

    package init(
        command: String? = nil, positionals: [String] = [], flags: Set<String> = [],
        values: [String: String] = [:]
    ) {
        self.command = command
        self.positionals = positionals
        self.flags = flags
        self.values = values
    }

    package var wantsHelp: Bool { flags.contains("help") }
    package func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// A command line the tool cannot run. Its message is one line for stderr; exit code 64.
package struct UsageError: Error, Equatable {
    package let message: String
    /// The command the message concerns, so the hint can name its help.
    package let command: String?

    package init(message: String, command: String?) {
        self.message = message
        self.command = command
    }
}

/// A small parser: GNU-style long options (`--name value`, `--name=value`), `-h`, `--` ending
/// options, `-` as an ordinary argument (standard input). Options of the tool as a whole may
/// come before or after the command; a command's own options come after it.
///
/// A token of one dash followed by something other than a letter (`-5`, `-1.5`, `-[1]`) is
/// an ordinary argument too, since no option looks like that: `put notes n -5` stores `-5`.
/// Other values starting with `-` go after `--`.
package enum ArgumentParser {
    package static func parse(
        _ arguments: [String], globalOptions: [OptionSpec], commands: [CommandSpec]
    ) throws(UsageError) -> ParsedCommandLine {
        var result = ParsedCommandLine()
        var commandSpec: CommandSpec?
        var index = 0
        var optionsEnded = false

        func lookup(_ name: String) -> OptionSpec? {
            globalOptions.first { $0.name == name } ?? commandSpec?.options.first { $0.name == name }
        }
        func lookupShort(_ letter: Character) -> OptionSpec? {
            globalOptions.first { $0.shortName == letter }
                ?? commandSpec?.options.first { $0.shortName == letter }
        }

        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !optionsEnded && argument == "--" {
                optionsEnded = true
                continue
            }
            if !optionsEnded && argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name: String
                var inlineValue: String?
                if let equals = body.firstIndex(of: "=") {
                    name = String(body[..<equals])
                    inlineValue = String(body[body.index(after: equals)...])
                } else {
                    name = String(body)
                }
                guard let spec = lookup(name) else {
                    throw UsageError(message: unknownOptionMessage("--" + name, command: result.command,
                                                                   commands: commands),
                                     command: result.command)
                }
                if spec.takesValue {
                    if !spec.repeats, result.values[spec.name] != nil {
                        throw UsageError(message: "option --\(spec.name) is given twice; give it once", command: result.command)
                    }
                    if let inlineValue {
                        result.values[spec.name] = inlineValue
                        result.allValues[spec.name, default: []].append(inlineValue)
                    } else if index < arguments.count {
                        // `--merged --json` is an option without its value, not the value
                        // "--json": a value that begins with -- is given inline.
                        let value = arguments[index]
                        guard !value.hasPrefix("--") else {
                            throw UsageError(
                                message: "option --\(spec.name) needs a value (\(spec.valueName ?? "VALUE")), not the option "
                                    + "\(value); write --\(spec.name)=\(value) for a value beginning with --",
                                command: result.command)
                        }
                        result.values[spec.name] = value
                        result.allValues[spec.name, default: []].append(value)
                        index += 1
                    } else {
                        throw UsageError(message: "option --\(spec.name) needs a value (\(spec.valueName ?? "VALUE"))",
                                         command: result.command)
                    }
                } else {
                    if inlineValue != nil {
                        throw UsageError(message: "option --\(spec.name) takes no value", command: result.command)
                    }
                    try insertFlag(spec, into: &result)
                }
                continue
            }
            if !optionsEnded && isShortOptionCluster(argument) {
                let letters = argument.dropFirst()
                for letter in letters {
                    guard let spec = lookupShort(letter), !spec.takesValue else {
                        var message = "unknown option -\(letter)"
                        if result.command != nil {
                            message += "; a value starting with '-' goes after '--', as in: -- \(argument)"
                        }
                        throw UsageError(message: message, command: result.command)
                    }
                    try insertFlag(spec, into: &result)
                }
                continue
            }
            if result.command == nil {
                guard let spec = commands.first(where: { $0.name == argument }) else {
                    throw UsageError(message: "unknown command '\(argument)'", command: nil)
                }
                result.command = spec.name
                commandSpec = spec
            } else {
                result.positionals.append(argument)
            }
        }

        if let commandSpec, !result.wantsHelp {
            try checkArity(result.positionals, spec: commandSpec)
        }
        return result
    }

    /// Sets a flag; one given twice (by either of its names) is refused, as an option with a
    /// value is, except `--help`.
    private static func insertFlag(_ spec: OptionSpec, into result: inout ParsedCommandLine) throws(UsageError) {
        if !result.flags.insert(spec.name).inserted, spec.name != "help" {
            let names = spec.shortName.map { "--\(spec.name) (-\($0))" } ?? "--\(spec.name)"
            throw UsageError(message: "option \(names) is given twice; give it once", command: result.command)
        }
    }

    /// Whether `argument` is a cluster of short options such as `-h` or `-qh`: one dash and a
    /// letter. `-` alone, and a dash before a digit or any other non-letter (a negative
    /// number, `-.5`, `-[1]`), are values.
    package static func isShortOptionCluster(_ argument: String) -> Bool {
        guard argument.hasPrefix("-"), !argument.hasPrefix("--") else { return false }
        let rest = argument.dropFirst()
        guard let first = rest.first else { return false }
        return first.isLetter
    }

    private static func checkArity(_ positionals: [String], spec: CommandSpec) throws(UsageError) {
        let required = spec.arguments.filter { !$0.isOptional }
        if positionals.count < required.count {
            let missing = required[positionals.count...].map(\.name).joined(separator: " ")
            throw UsageError(message: "\(spec.name) needs \(missing)", command: spec.name)
        }
        if positionals.count > spec.arguments.count {
            let extra = positionals.count - spec.arguments.count
            throw UsageError(message: "\(spec.name) takes \(spec.arguments.count) argument(s); \(extra) too many",
                             command: spec.name)
        }
    }

    private static func unknownOptionMessage(_ option: String, command: String?, commands: [CommandSpec]) -> String {
        if command == nil, let owner = commands.first(where: { $0.options.contains { "--" + $0.name == option } }) {
            return "option \(option) belongs after the command '\(owner.name)'"
        }
        if let command {
            return "unknown option \(option) for '\(command)'"
        }
        return "unknown option \(option)"
    }
}
