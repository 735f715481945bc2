/// The layout of `--help` texts, shared by `recordkeeper` and `recordkeeper-relay`.
package enum HelpText {
    /// `text` followed by spaces up to `width` characters.
    package static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// One line per option: `-h, --name VALUE  help`, with the help texts aligned.
    package static func optionLines(_ options: [OptionSpec]) -> [String] {
        let labels = options.map { option -> String in
            var label = option.shortName.map { "-\($0), " } ?? "    "
            label += "--" + option.name
            if let valueName = option.valueName { label += " " + valueName }
            return label
        }
        let width = labels.map(\.count).max() ?? 0
        return zip(labels, options).map { label, option in
            "  " + padded(label, to: width) + "  " + option.help
        }
    }
}
