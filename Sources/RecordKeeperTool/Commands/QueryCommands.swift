import Foundation
import RecordKeeper
import RecordKeeperCommandLine

/// `list` with `--where`, `--order` or `--limit`, and `index`.
enum QueryCommands {
    static func isQuery(_ context: CommandContext) -> Bool {
        ["where", "order", "limit"].contains { context.arguments.values[$0] != nil }
    }

    /// The records the query selects, in its order, as `list` prints records.
    static func list(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let query = try parseQuery(context.arguments)
        let store = try context.store.existingStore()
        guard try await store.records(collection, limit: 1) != nil else {
            throw ToolError(.notFound, "no collection \(quoted(collection)) in \(context.store.path)")
        }
        let withValues = context.arguments.has("values")
        for record in try await store.query(collection, query).elements {
            var line = "\(JSONText.displayName(record.key))\t\(record.data.count)\t\(record.version.rawValue)"
            if withValues { line += "\t" + String(decoding: PayloadCoding.text(for: record.data), as: UTF8.self) }
            try context.output.write(line + "\n")
        }
        return .ok
    }

    /// Adds and drops declared indexes, then prints the declared fields. Listing the indexes
    /// of a collection that does not exist is exit 66, as `list` of it is; dropping an index
    /// that is not declared succeeds and says so on stderr (the field list stays stdout's),
    /// as `delete` of a record that is not stored does.
    static func index(_ context: CommandContext) async throws -> ExitCode {
        let collection = try context.name(0, "collection name")
        let adds = try (context.arguments.allValues["add"] ?? []).map { try field($0, "--add", command: "index") }
        let drops = try (context.arguments.allValues["drop"] ?? []).map { try field($0, "--drop", command: "index") }
        let store = adds.isEmpty ? try context.store.existingStore() : try context.store.writableStore()
        for field in adds { try await store.declareIndex(collection, on: field) }
        for field in drops where try await !store.dropIndex(collection, on: field) {
            if !context.quiet {
                StandardError.writeLine("recordkeeper: no index on \(quoted(field.description)) in \(quoted(collection)); nothing was dropped")
            }
        }
        if !adds.isEmpty || !drops.isEmpty { context.written.set() }
        if adds.isEmpty, drops.isEmpty, try await store.records(collection, limit: 1) == nil {
            throw ToolError(.notFound, "no collection \(quoted(collection)) in \(context.store.path)")
        }
        for field in try await store.declaredIndexes(collection) { try context.output.write("\(field)\n") }
        return .ok
    }

    /// The query `--where`, `--order` and `--limit` describe.
    static func parseQuery(_ arguments: ParsedCommandLine) throws(UsageError) -> RecordQuery {
        var query = RecordQuery()
        let predicates = try (arguments.allValues["where"] ?? []).map { text throws(UsageError) in try predicate(text) }
        if !predicates.isEmpty { query.predicate = predicates.count == 1 ? predicates[0] : .and(predicates) }
        for text in arguments.allValues["order"] ?? [] {
            var name = Substring(text)
            var descending = false
            if let colon = text.lastIndex(of: ":") {
                let direction = text[text.index(after: colon)...]
                guard direction == "desc" || direction == "asc" else {
                    throw usage("--order \(quoted(text)): the direction after ':' is asc or desc")
                }
                descending = direction == "desc"
                name = text[..<colon]
            }
            query.order.append(RecordOrder(try field(String(name), "--order"), descending: descending))
        }
        if let text = arguments.values["limit"] {
            guard let limit = Int(text), limit > 0 else { throw usage("--limit \(quoted(text)): not a positive number") }
            query.limit = limit
        }
        return query
    }

    /// `FIELD OP VALUE`, spaces around OP optional.
    static func predicate(_ text: String) throws(UsageError) -> RecordPredicate {
        let operators: Set<Character> = ["=", "!", "<", ">"]
        guard let start = text.firstIndex(where: operators.contains) else {
            throw usage("--where \(quoted(text)): no operator (one of = != < <= > >=)")
        }
        // The whole run of operator characters, so that `<>` or `=>` is refused, not read as
        // `<` with the value `> 1`.
        let end = text[start...].firstIndex { !operators.contains($0) } ?? text.endIndex
        let symbol = String(text[start..<end])
        guard let comparison = RecordPredicate.Comparison(rawValue: symbol) else {
            throw usage("--where \(quoted(text)): \(quoted(symbol)) is not an operator (one of = != < <= > >=)")
        }
        let name = text[..<start].trimmingCharacters(in: .whitespaces)
        let path = try field(name, "--where \(quoted(text))")
        let valueText = text[end...].trimmingCharacters(in: .whitespaces)
        guard !valueText.isEmpty else { throw usage("--where \(quoted(text)): no value after \(symbol)") }
        if let first = valueText.first, operators.contains(first) {
            throw usage("--where \(quoted(text)): the value \(quoted(valueText)) starts like an operator; "
                + "to compare with that text, write it as a JSON string (\"\(valueText)\")")
        }
        let value = try value(valueText, in: text)
        switch (comparison, value) {
        case (.equal, .null): return .isNull(path)
        case (.notEqual, .null): return .not(.isNull(path))
        default: return .compare(path, comparison, value)
        }
    }

    /// VALUE as JSON when it parses as a JSON scalar, else the plain string.
    static func value(_ text: String, in predicate: String) throws(UsageError) -> QueryValue {
        switch text {
        case "null": return .null
        case "true": return .bool(true)
        case "false": return .bool(false)
        default: break
        }
        if let integer = Int64(text) { return .integer(integer) }
        let numberCharacters = Set("0123456789+-.eE")
        if text.allSatisfy(numberCharacters.contains), let number = Double(text), number.isFinite,
            parsesAsJSON(text)
        {
            return .double(number)
        }
        if text.hasPrefix("\""), let string = jsonString(text) { return .string(string) }
        if text.hasPrefix("{") || text.hasPrefix("["), parsesAsJSON(text) {
            throw usage("--where \(quoted(predicate)): compare with a number, string, true, false or null, not an object or array")
        }
        return .string(text)
    }

    /// True when `text` is one JSON value (a parse failure answers false, it is not an error).
    private static func parsesAsJSON(_ text: String) -> Bool {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            return true
        } catch {
            return false
        }
    }

    /// The string a quoted JSON string stands for; nil when `text` is not one (then it is a
    /// plain string: not an error).
    private static func jsonString(_ text: String) -> String? {
        do {
            return try JSONDecoder().decode(String.self, from: Data(text.utf8))
        } catch {
            return nil
        }
    }

    /// The field path `name`, given with `context` (an option) to `command`, whose help the
    /// usage error points to.
    static func field(_ name: String, _ context: String, command: String = "list") throws(UsageError) -> FieldPath {
        do {
            return try FieldPath(name)
        } catch {
            throw usage(
                "\(context): field \(quoted(name)) is not a field path (keys of letters, digits and _, separated by dots)",
                command: command)
        }
    }

    private static func usage(_ message: String, command: String = "list") -> UsageError {
        UsageError(message: message, command: command)
    }
}
