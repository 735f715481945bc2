import RecordKeeperCommandLine

/// Every command the tool knows, with the text its `--help` prints.
enum CommandCatalog {
    static let globalOptions: [OptionSpec] = [
        .value("store", "PATH", help: "The store file (default: $RECORDKEEPER_STORE, else ./records.sqlite)."),
        .flag("quiet", short: "q", help: "No progress (stderr) and no one-line summaries of what a command did (stdout)."),
        .flag("help", short: "h", help: "Show help for the tool or for a command."),
    ]

    static let commands: [CommandSpec] = [
        CommandSpec(
            name: "collections", arguments: [], options: [],
            summary: "List the collections with their record counts and payload sizes.",
            discussion: "Prints one tab-separated line per collection: name, records, payload bytes."),
        CommandSpec(
            name: "list", arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false)],
            options: [
                .flag("values", help: "Also print each value (JSON, or base64:... for other bytes)."),
                .value("where", "'FIELD OP VALUE'", repeats: true,
                       help: "Only records whose JSON FIELD compares so; OP is = != < <= > >=; may repeat (all must hold)."),
                .value("order", "FIELD[:desc]", repeats: true, help: "Sort by FIELD (ascending unless :desc); may repeat. Ties by key."),
                .value("limit", "N", help: "At most N records."),
            ],
            summary: "List the records of a collection in key order, or those a query selects in its order.",
            discussion: """
                Prints one tab-separated line per record: key, size in bytes, version[, value].
                FIELD is a key of the stored JSON, nested keys separated by dots (address.city). VALUE is read as JSON
                when it parses as JSON (numbers, true, false, null, a quoted string), else as a plain string.
                A malformed --where, --order or --limit exits 64 with the reason. Fields with a declared index
                (see index) are searched through it; others are read by a scan.
                """),
        CommandSpec(
            name: "index", arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false)],
            options: [
                .value("add", "FIELD", repeats: true, help: "Declare an index on FIELD of the stored JSON (creates the store if needed)."),
                .value("drop", "FIELD", repeats: true, help: "Drop the declared index on FIELD."),
            ],
            summary: "List the collection's declared indexes, or add and drop them.",
            discussion: """
                Prints the declared fields, one per line, after any change. Every payload of a collection with a
                declared index must be JSON: --add over a payload that is not JSON exits 65 naming its key. A
                malformed FIELD exits 64; listing a collection that does not exist exits 66. Dropping an index
                that is not declared says so on stderr and exits 0.
                """),
        CommandSpec(
            name: "get",
            arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false), ArgumentSpec(name: "KEY", isOptional: false)],
            options: [.flag("raw", help: "Write the stored bytes unchanged, with no newline.")],
            summary: "Print one record's value.",
            discussion: "A JSON payload prints as compact JSON; other bytes print as base64:<base64>."),
        CommandSpec(
            name: "put",
            arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false), ArgumentSpec(name: "KEY", isOptional: false),
                        ArgumentSpec(name: "VALUE", isOptional: false)],
            options: [
                .flag("json", help: "Require VALUE to be JSON and store its compact form."),
                .flag("base64", help: "VALUE is base64 (line breaks allowed); store the decoded bytes."),
                .value("if-version", "VERSION",
                       help: "Only if the record still has VERSION (see list), or 'absent': only if it does not exist."),
            ],
            summary: "Store a value (VALUE '-' reads standard input); creates the store if needed.",
            discussion: """
                Without --json or --base64 the bytes of VALUE (or of standard input) are stored exactly.
                With --if-version nothing is written, and the exit code is 75, when the record changed meanwhile.
                A VALUE such as -5 is a value; one starting with '-' and a letter goes after '--' (put c k -- -x).
                """),
        CommandSpec(
            name: "delete",
            arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false), ArgumentSpec(name: "KEY", isOptional: false)],
            options: [.value("if-version", "VERSION", help: "Only if the record still has VERSION (see list).")],
            summary: "Remove one record.",
            discussion: """
                Prints whether it removed the record; a record that does not exist is not an error (exit 0, nothing
                written). Exits 66 when there is no store, 75 when --if-version no longer matches (or the record is gone).
                """),
        CommandSpec(
            name: "apply",
            arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false), ArgumentSpec(name: "FILE", isOptional: false)],
            options: [],
            summary: "Apply a JSON change set from FILE ('-' for standard input) as one transaction.",
            discussion: """
                The change set is {"upserts": {"KEY": VALUE, ...}, "removals": ["KEY", ...]}.
                A VALUE is stored as its compact JSON; {"$base64": "..."} stores the decoded bytes.
                Malformed input is reported with line and column and nothing is written.
                Prints what the store did: added, changed, removed, unchanged, and keys to remove already absent.
                """),
        CommandSpec(
            name: "export", arguments: [ArgumentSpec(name: "COLLECTION", isOptional: true)],
            options: [
                .value("format", "json|ndjson", help: "Output format (default json; ndjson when --output ends in .ndjson or .jsonl)."),
                .value("output", "FILE", help: "Write to FILE (atomically) instead of standard output."),
            ],
            summary: "Export the whole store, or one collection, as JSON or NDJSON.",
            discussion: "Reads one consistent snapshot and streams it; see docs/CLI.md for both formats."),
        CommandSpec(
            name: "import", arguments: [ArgumentSpec(name: "FILE", isOptional: false)],
            options: [
                .flag("replace", help: "Replace every collection named in FILE with exactly its records."),
                .flag("dry-run", help: "Only print how many records would be added, changed and removed."),
            ],
            summary: "Import an export (JSON or NDJSON, detected) from FILE ('-' for standard input).",
            discussion: """
                Merges by default: records in FILE are added or overwritten, others are kept.
                All or nothing: malformed input is reported with line and column and nothing is written.
                """),
        CommandSpec(
            name: "check", arguments: [], options: [],
            summary: "Run SQLite's integrity check and print the format version and sizes.",
            discussion: "Exits 65 when the integrity check reports problems."),
        CommandSpec(
            name: "info", arguments: [], options: [],
            summary: "Print the store's path, format, SQLite settings and sizes.",
            discussion: ""),
        CommandSpec(
            name: "backup", arguments: [ArgumentSpec(name: "DEST", isOptional: false)],
            options: [.flag("overwrite", help: "Replace a file already at DEST (else exit 73, DEST unchanged).")],
            summary: "Write a consistent copy of the whole store to the new file DEST (mode 0600).",
            discussion: """
                Safe while other processes keep writing: the copy is one snapshot, in one complete file
                (no -wal needed), written next to DEST and moved into place only when complete.
                Restore by opening the copy, or moving it to the store's path while nothing has the store open.
                """),
        CommandSpec(
            name: "sync", arguments: [],
            options: [
                .value("server", "CONNINFO|URL",
                       help: "A relay's http(s) URL, or a PostgreSQL server as libpq conninfo or URI (default: $RECORDKEEPER_SYNC_SERVER)."),
                .value("token-file", "FILE", help: "Through a relay: the file holding the token (default: the token in $RECORDKEEPER_SYNC_TOKEN)."),
                .value("space", "SPACE", help: "The space to sync with (required the first time; later the stored one; through a relay the token's)."),
                .value("collections", "a,b", help: "Collections to start syncing (required the first time)."),
                .flag("last-writer-wins", help: "The collections named let the later push win instead of reporting conflicts."),
                .flag("recover", help: "Sync as a new device first: after restoring the store from a backup, or when the server refused it as forked."),
                .value("timeout", "SECONDS", help: "How long one push or pull request may take: 1 to 86400 (default 30)."),
                .flag("json", help: "Print what the sync did as one JSON document (its fields are described above) instead of lines."),
                .flag("watch", help: "Keep the store in sync until SIGINT or SIGTERM, one line (with --json one object) per round."),
            ],
            summary: "Push pending changes to a sync relay or PostgreSQL server, then pull to its head.",
            discussion: """
                --server http(s)://HOST:PORT syncs through a relay (recordkeeper-relay) with the token of --token-file
                (or $RECORDKEEPER_SYNC_TOKEN): the space is the token's (--space, if given, must be it). Any other
                --server is a PostgreSQL connection string (direct mode, for trusted networks).
                The first sync of a store needs --space and --collections; they are stored, and later syncs
                use them (a different --space is refused; --collections adds collections, or sets the policy of
                collections already syncing: report, or with --last-writer-wins the later push wins). Records present
                when a collection starts syncing are uploaded once. Prints what was pushed and pulled, and one
                tab-separated line per new conflict (collection, key, server version).
                --json prints one document instead: {"space", "device", "started": [..], "policyChanged": [..],
                "policy", "recovery": null or {"reason", "device", "previousDevice", "reissuedOperations"},
                "pushed": {"operations", "changes"}, "pulled": {"changes"}, "conflicts": {"new": [conflict as in
                conflicts --json], "unresolved"}, "pending", "cursor": {"counter", "position": null or
                {"collection", "key"}}}; a sync that fails prints no JSON (the exit code and stderr say why).
                A copy of a store file (a backup, a copied file) syncs as a device of its own. After restoring a
                store from a backup, sync with --recover: the store takes a new device id and sends its pending
                changes again, based on what it had seen, so that an edit made since is a reported conflict.
                Exits 69 when the server cannot be reached or does not answer in time (local data untouched:
                pending changes stay queued and go with the next sync), 65 for bad input (nothing changed) and
                when the server refused the store's operations as a copy of another device's (run --recover),
                77 when the server refuses the role or password or the relay the token or request, 78 when the
                settings are wrong (retrying helps
                neither). Connecting is given up after 10 s (connect_timeout=N in CONNINFO, or
                PGCONNECT_TIMEOUT, sets another bound), a push or pull request after --timeout.
                --watch keeps syncing until SIGINT or SIGTERM (then "stopped", exit 0): it pushes soon after every
                local commit (of any process), holds a live pull otherwise, and prints one line per round:
                "up to date: pushed ..., pulled ..., N new conflict(s)", "needs attention: ..." while conflicts
                are unresolved, "offline: ERROR; attempt N failed, next attempt at TIME (in S s)" while the
                server cannot be reached (it retries with backoff; never exit 69). --json prints one object per
                line instead: {"state": "upToDate" | "needsAttention" | "offline" | "stopped", ...}. A refused
                token or request (77), wrong settings (78) or a forked store (65) ends it with that exit code.
                """),
        CommandSpec(
            name: "conflicts", arguments: [],
            options: [.flag("json", help: "Print one JSON document instead of lines.")],
            summary: "List the unresolved sync conflicts; never writes.",
            discussion: """
                One tab-separated line per conflict: collection, key, server version, local value, server value
                (values as 'get' prints them, (deleted) for a deleted side). The record holds the server's value
                until the conflict is resolved. --json prints {"conflicts": [{"collection", "key", "serverVersion",
                "local", "server"}]} with each side {"value": VALUE} or {"deleted": true}.
                """),
        CommandSpec(
            name: "resolve",
            arguments: [ArgumentSpec(name: "COLLECTION", isOptional: false), ArgumentSpec(name: "KEY", isOptional: false)],
            options: [
                .value("keep", "local|server", help: "Which side to keep."),
                .value("merged", "VALUE", help: "Write VALUE instead ('-' reads standard input)."),
                .flag("json", help: "With --merged: require VALUE to be JSON and store its compact form."),
                .flag("base64", help: "With --merged: VALUE is base64 (line breaks allowed); store the decoded bytes."),
            ],
            summary: "Resolve a sync conflict by keeping the local or the server's value, or with a merged one.",
            discussion: """
                --keep server keeps the value the record has now (the server's) and drops the conflict.
                --keep local writes the device's value back (or deletes the record, if it was deleted
                locally); the next sync pushes it, based on the server's version. --merged VALUE writes VALUE
                (read as put reads it) and the next sync pushes it the same way. Give --keep or --merged.
                Exits 66 when there is no such conflict, 65 for a VALUE that is not what --json or --base64
                says (nothing written). Needs no server.
                """),
        CommandSpec(
            name: "help", arguments: [ArgumentSpec(name: "COMMAND", isOptional: true)], options: [],
            summary: "Show help for the tool or for a command.",
            discussion: ""),
    ]

    static func spec(named name: String) -> CommandSpec? {
        commands.first { $0.name == name }
    }

    /// The text of `recordkeeper --help`.
    static var toolHelp: String {
        let width = commands.map(\.name.count).max() ?? 0
        var lines = [
            "recordkeeper: inspect, edit, export, import, check and sync RecordKeeper stores.",
            "",
            "Usage: recordkeeper [--store PATH] COMMAND [ARGUMENTS] [OPTIONS]",
            "",
            "Commands:",
        ]
        for command in commands {
            lines.append("  " + padded(command.name, to: width)
                         + "  " + command.summary)
        }
        lines.append("")
        lines.append("Options:")
        lines.append(contentsOf: optionLines(globalOptions))
        lines.append("")
        lines.append("Reading commands never create a store. Exit codes: 0 ok, 64 usage, 65 bad input data,")
        lines.append("66 not found, 69 store refused or sync server unreachable, 70 internal error,")
        lines.append("73 cannot create output, 74 I/O error, 75 conflict (store busy or record changed),")
        lines.append("77 sync server refused the credentials, 78 sync server settings wrong.")
        lines.append("Run 'recordkeeper COMMAND --help' for a command's details.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The text of `recordkeeper COMMAND --help`.
    static func help(for spec: CommandSpec) -> String {
        let arguments = spec.arguments.map { $0.isOptional ? "[\($0.name)]" : $0.name }
        var usage = "Usage: recordkeeper [--store PATH] \(spec.name)"
        if !arguments.isEmpty { usage += " " + arguments.joined(separator: " ") }
        if !spec.options.isEmpty { usage += " [OPTIONS]" }
        var lines = [spec.summary, "", usage]
        if !spec.discussion.isEmpty {
            lines.append("")
            lines.append(contentsOf: spec.discussion.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
        lines.append("")
        lines.append("Options:")
        lines.append(contentsOf: optionLines(spec.options + globalOptions))
        return lines.joined(separator: "\n") + "\n"
    }

    private static func padded(_ text: String, to width: Int) -> String {
        HelpText.padded(text, to: width)
    }

    private static func optionLines(_ options: [OptionSpec]) -> [String] {
        HelpText.optionLines(options)
    }
}
