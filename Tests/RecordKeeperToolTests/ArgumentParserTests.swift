import Testing
@testable import RecordKeeperTool

@Suite struct ArgumentParserTests {
    private func parse(_ arguments: [String]) throws(UsageError) -> ParsedCommandLine {
        try ArgumentParser.parse(arguments, globalOptions: CommandCatalog.globalOptions,
                                 commands: CommandCatalog.commands)
    }

    private func usageError(_ arguments: [String]) -> UsageError? {
        do {
            _ = try parse(arguments)
            return nil
        } catch {
            return error
        }
    }

    @Test func `store option is accepted before and after the command`() throws {
        let before = try parse(["--store", "a.sqlite", "get", "users", "alice"])
        let after = try parse(["get", "users", "alice", "--store", "a.sqlite"])
        let inline = try parse(["get", "--store=a.sqlite", "users", "alice"])
        for parsed in [before, after, inline] {
            #expect(parsed.command == "get")
            #expect(parsed.positionals == ["users", "alice"])
            #expect(parsed.values["store"] == "a.sqlite")
        }
    }

    @Test func `an option given twice is refused unless it repeats`() throws {
        #expect(usageError(["--store", "a.sqlite", "get", "users", "alice", "--store", "b.sqlite"])?.message
                == "option --store is given twice; give it once")
        #expect(usageError(["put", "n", "k", "1", "--if-version", "1", "--if-version=2"])?.message
                == "option --if-version is given twice; give it once")
        let list = try parse(["list", "items", "--where", "n > 1", "--where", "n < 5", "--order", "n", "--order", "s:desc"])
        #expect(list.allValues["where"] == ["n > 1", "n < 5"])
        #expect(list.allValues["order"] == ["n", "s:desc"])
    }

    @Test func `a flag given twice is refused, by either of its names`() throws {
        #expect(usageError(["put", "c", "a", "1", "--json", "--json"])?.message == "option --json is given twice; give it once")
        #expect(usageError(["-q", "--quiet", "collections"])?.message == "option --quiet (-q) is given twice; give it once")
        #expect(usageError(["-q", "put", "c", "q", "1", "-q"])?.message == "option --quiet (-q) is given twice; give it once")
        // Asking for help twice still asks for help.
        #expect(try parse(["get", "--help", "-h"]).wantsHelp)
    }

    @Test func `command flags and values are collected by long name`() throws {
        let parsed = try parse(["export", "users", "--format", "ndjson", "--output=out.ndjson", "-q"])
        #expect(parsed.positionals == ["users"])
        #expect(parsed.values == ["format": "ndjson", "output": "out.ndjson"])
        #expect(parsed.flags == ["quiet"])
    }

    @Test func `a single dash is an argument and a double dash ends the options`() throws {
        let parsed = try parse(["put", "notes", "--", "--weird-key", "-"])
        #expect(parsed.positionals == ["notes", "--weird-key", "-"])
        #expect(parsed.flags.isEmpty)
    }

    @Test func `an empty argument stays an argument`() throws {
        #expect(try parse(["get", "", "key"]).positionals == ["", "key"])
    }

    @Test func `an unknown command is a usage error`() {
        #expect(usageError(["frobnicate"]) == UsageError(message: "unknown command 'frobnicate'", command: nil))
    }

    @Test func `an unknown option names the command`() {
        let error = usageError(["list", "users", "--colour"])
        #expect(error == UsageError(message: "unknown option --colour for 'list'", command: "list"))
        #expect(usageError(["list", "users", "-x"])?.message
                == "unknown option -x; a value starting with '-' goes after '--', as in: -- -x")
        #expect(usageError(["-x"])?.message == "unknown option -x")
    }

    @Test(arguments: ["-5", "-1.5", "-.5", "-0", "-[1]", "-{}", "-\"x\"", "- x", "-€5"])
    func `a dash before a non-letter is a value, not an option`(value: String) throws {
        let parsed = try parse(["put", "notes", "n", value])
        #expect(parsed.command == "put")
        #expect(parsed.positionals == ["notes", "n", value])
        #expect(parsed.flags.isEmpty)
    }

    @Test func `a negative number is a value wherever it stands`() throws {
        #expect(try parse(["put", "-q", "notes", "-1", "-2"]).positionals == ["notes", "-1", "-2"])
        #expect(try parse(["put", "notes", "n", "-5", "--json"]).flags == ["json"])
        #expect(try parse(["put", "--if-version", "3", "notes", "n", "-5"]).values["if-version"] == "3")
    }

    @Test func `a value starting with dash and a letter needs the double dash`() throws {
        #expect(usageError(["put", "notes", "n", "-abc"])?.message
                == "unknown option -a; a value starting with '-' goes after '--', as in: -- -abc")
        #expect(try parse(["put", "notes", "n", "--json", "--", "-abc"]).positionals == ["notes", "n", "-abc"])
        #expect(try parse(["put", "notes", "--", "-n", "--"]).positionals == ["notes", "-n", "--"])
    }

    @Test func `a command option before the command is explained`() {
        #expect(usageError(["--values", "list", "users"])?.message
                == "option --values belongs after the command 'list'")
    }

    @Test func `missing and extra arguments are reported`() {
        #expect(usageError(["get", "users"])?.message == "get needs KEY")
        #expect(usageError(["put"])?.message == "put needs COLLECTION KEY VALUE")
        #expect(usageError(["collections", "extra"])?.message == "collections takes 0 argument(s); 1 too many")
        #expect(usageError(["export", "a", "b"])?.command == "export")
    }

    @Test func `an option whose value is missing does not take the next option as its value`() throws {
        #expect(usageError(["info", "--store", "--json"])?.message
                == "option --store needs a value (PATH), not the option --json; write --store=--json for a value beginning with --")
        #expect(usageError(["info", "--store", "--"]) != nil)
        #expect(usageError(["resolve", "notes", "today", "--merged", "--json"]) != nil, "never the value \"--json\"")
        #expect(try parse(["info", "--store=--odd.sqlite"]).values["store"] == "--odd.sqlite")
    }

    @Test func `an option without its value is reported`() {
        #expect(usageError(["info", "--store"])?.message == "option --store needs a value (PATH)")
    }

    @Test func `a flag given a value is refused`() {
        #expect(usageError(["list", "users", "--values=yes"])?.message == "option --values takes no value")
    }

    @Test func `help skips the argument count check`() throws {
        let parsed = try parse(["put", "--help"])
        #expect(parsed.command == "put")
        #expect(parsed.wantsHelp)
        #expect(try parse(["-h"]).wantsHelp)
        #expect(try parse([]).command == nil)
    }

    @Test func `every command has help text that names its options`() {
        for spec in CommandCatalog.commands {
            let help = CommandCatalog.help(for: spec)
            #expect(help.contains("Usage: recordkeeper [--store PATH] \(spec.name)"))
            for option in spec.options {
                #expect(help.contains("--\(option.name)"))
            }
            #expect(CommandCatalog.toolHelp.contains(spec.name))
        }
    }
}
