import RecordKeeperCommandLine

/// The commands of `recordkeeper-relay` (the command line of issue 24 is pinned: scripts and
/// people depend on it; options may be added, never renamed).
enum RelayCommandCatalog {
    static let globalOptions: [OptionSpec] = [
        .flag("help", short: "h", help: "Show help for the tool or for a command."),
    ]

    static let database = OptionSpec.value(
        "database", "CONNINFO", help: "The PostgreSQL server (libpq conninfo or URI; default $RECORDKEEPER_RELAY_DATABASE).")

    static let shardMap = OptionSpec.value(
        "shard-map", "FILE",
        help: "Instead of --database: the shard map, a JSON file naming several databases (docs/SCALING.md; default $RECORDKEEPER_RELAY_SHARD_MAP).")

    static let commands: [CommandSpec] = [
        CommandSpec(
            name: "migrate", arguments: [],
            options: [
                database,
                shardMap,
                .value("grant", "ROLE", help: "Then grant ROLE what serve needs: DML on the sync tables, no CREATE."),
                .value(
                    "step-timeout", "SECONDS",
                    help: "How long one migration step may take (default 30; up to 86400): a step that builds an index "
                        + "over a large table needs more."),
            ],
            summary: "Create or migrate the sync schema, once, as a role that may create tables.",
            discussion: """
                Prints the schema version. With --grant ROLE (an existing role), grants it USAGE on the schema and
                SELECT, INSERT, UPDATE, DELETE on the sync tables, so that serve can connect as ROLE with no other
                right. With --shard-map, migrates (and grants on) every shard, one after the other, each line naming
                its shard. Exits 69 when the server cannot be reached.
                """),
        CommandSpec(
            name: "serve", arguments: [],
            options: [
                database,
                shardMap,
                .value("listen", "HOST:PORT", help: "Where to listen (default $RECORDKEEPER_RELAY_LISTEN, else 127.0.0.1:8080)."),
                .value("jwt-secret-file", "FILE", help: "HS256: the shared secret, the file's bytes (at least 32; trailing newlines dropped)."),
                .value("jwt-public-key", "PEM", help: "ES256: the P-256 public key, a PEM file (or the PEM text itself)."),
                .value("jwt-issuer", "ISS", help: "Tokens must have this iss."),
                .value("jwt-audience", "AUD", help: "Tokens' aud must name this audience."),
                .value("jwt-leeway", "SECONDS", help: "Clock skew allowed on exp and nbf (default 60)."),
                .value("tls-cert", "FILE", help: "Serve HTTPS with this certificate chain (PEM); needs --tls-key."),
                .value("tls-key", "FILE", help: "The certificate's private key (PEM, unencrypted)."),
                .value("max-body", "BYTES", help: "The largest request body (default 8388608); larger pushes get 413."),
                .value("pool", "N", help: "Database connections, as many requests at once (default 4)."),
                .value("statement-timeout", "SECONDS", help: "PostgreSQL's statement_timeout on every connection (default: none)."),
                .value("max-connections", "N", help: "Client connections open at once, held live pulls included (default 4096)."),
                .value("max-pull-wait", "SECONDS", help: "The longest a live pull (wait=) is held (default $RECORDKEEPER_RELAY_MAX_PULL_WAIT, else 60; at most 300)."),
                .value("max-pages-per-answer", "N", help: "The most pages one pull answer holds when a client asks for several (default and at most 16; 1: a page per request)."),
                .value("pulls-ahead", "N", help: "The most answers of devices catching up read ahead while the answer before travels (default 16; 0: none)."),
                .value("live-wake", "HOW", help: "How held pulls hear of other relays' pushes: poll (default, every 5 ms), poll:MS, or listen (LISTEN/NOTIFY)."),
                .value("wake-database", "CONNINFO", help: "A direct connection for the wake session, when --database goes through PgBouncer (default: --database)."),
                .value("header-timeout", "SECONDS", help: "Time a client has to send a request's headers (default 10)."),
                .value("body-timeout", "SECONDS", help: "Time a client has to send a request's body, from its headers (default 120)."),
                .value("send-timeout", "SECONDS", help: "Time a client has to take a response, plus a second per 64 KiB of it (default 120)."),
                .value("idle-timeout", "SECONDS", help: "An idle connection closes after this (default 30)."),
                .value("grace", "SECONDS", help: "On SIGTERM, how long running requests may finish (default 30)."),
            ],
            summary: "Serve the sync relay until SIGTERM.",
            discussion: """
                Prints one line saying where it listens, then one log line per request on standard error.
                On SIGTERM or SIGINT new requests get 503, held live pulls are answered at once with their empty page,
                running ones finish (up to --grace), then it exits 0.
                Exactly one of --jwt-secret-file and --jwt-public-key (or their environment variables
                RECORDKEEPER_RELAY_JWT_SECRET_FILE, RECORDKEEPER_RELAY_JWT_PUBLIC_KEY) is required.
                With --shard-map, each space's requests go to its shard (--pool connections per shard); the relay
                refuses to start when the map would route an existing space away from the shard holding it (see check).
                """),
        CommandSpec(
            name: "compact", arguments: [],
            options: [
                database,
                shardMap,
                .value("older-than", "AGE", help: "Forget what is older than AGE: seconds, or with s, m, h or d (default 30d, at least 1h)."),
                .value("space", "S", help: "Compact only this space (default: every space)."),
                .value("batch", "N", help: "Rows deleted per transaction (default 1000)."),
            ],
            summary: "Delete old operation outcomes and tombstones, beside live traffic.",
            discussion: """
                Moves each space's horizon to the oldest cursor handed out within AGE (and no newer than what is
                older than AGE), then deletes the tombstones at or below it and the outcomes of operations received
                before AGE, in short transactions. Prints one line per space: space=S horizon=H tombstones=N
                operations=N. A device whose cursor is behind the horizon resyncs. Exits 69 when the server cannot
                be reached. With --shard-map, a space is compacted on its shard, and without --space every space of
                every shard.
                """),
        CommandSpec(
            name: "check", arguments: [],
            options: [
                .value(
                    "shard-map", "FILE",
                    help: "The shard map to check, a JSON file naming several databases (required; docs/SCALING.md; default $RECORDKEEPER_RELAY_SHARD_MAP).")
            ],
            summary: "Check that a shard map leaves every existing space on the shard holding it.",
            discussion: """
                Lists the spaces of every shard and prints each one the map would route to another shard
                (misplaced: space 'S' is on shard 'A' but the map routes it to 'B'), then the overrides object that pins
                them where they are. Exits 0 when none would move, 65 when some would, 69 when a shard cannot be
                reached, 78 for a map that cannot be used. Run it before serving a changed map.
                """),
        CommandSpec(
            name: "token", arguments: [],
            options: [
                .value("space", "S", help: "The space the token grants (required)."),
                .value("secret-file", "FILE", help: "The HS256 secret, as for serve --jwt-secret-file (required)."),
                .value("ttl", "SECONDS", help: "Lifetime: seconds, or with s, m, h or d (default 3600)."),
                .flag("read-only", help: "The token may pull but not push."),
                .value("collections", "a,b", help: "The only collections the token may push to and pull from."),
                .value("issuer", "ISS", help: "Set iss."),
                .value("audience", "AUD", help: "Set aud."),
            ],
            summary: "Print a token (HS256) for development and tests.",
            discussion: "The token carries space, exp, iat and, when given, read_only, collections, iss and aud."),
        CommandSpec(
            name: "help", arguments: [ArgumentSpec(name: "COMMAND", isOptional: true)], options: [],
            summary: "Show help for the tool or for a command.", discussion: ""),
    ]

    static func spec(named name: String) -> CommandSpec? {
        commands.first { $0.name == name }
    }

    static var toolHelp: String {
        let width = commands.map(\.name.count).max() ?? 0
        var lines = [
            "recordkeeper-relay: the sync relay; devices sync through it with tokens, never with database credentials.",
            "",
            "Usage: recordkeeper-relay COMMAND [OPTIONS]",
            "",
            "Commands:",
        ]
        for command in commands { lines.append("  " + HelpText.padded(command.name, to: width) + "  " + command.summary) }
        lines.append("")
        lines.append("Options:")
        lines.append(contentsOf: HelpText.optionLines(globalOptions))
        lines.append("")
        lines.append("Exit codes: 0 ok, 64 usage, 65 check found spaces a shard map would move, 66 file not found,")
        lines.append("69 database unreachable, 70 internal error, 78 bad configuration (a key, a certificate, an address,")
        lines.append("a shard map). docs/RELAY.md and docs/SCALING.md have the details.")
        return lines.joined(separator: "\n") + "\n"
    }

    static func help(for spec: CommandSpec) -> String {
        var lines = [spec.summary, "", "Usage: recordkeeper-relay \(spec.name)" + (spec.options.isEmpty ? "" : " [OPTIONS]")]
        if !spec.discussion.isEmpty {
            lines.append("")
            lines.append(contentsOf: spec.discussion.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
        lines.append("")
        lines.append("Options:")
        lines.append(contentsOf: HelpText.optionLines(spec.options + globalOptions))
        return lines.joined(separator: "\n") + "\n"
    }
}
