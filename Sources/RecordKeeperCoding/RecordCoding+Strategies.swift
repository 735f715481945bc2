import Foundation

extension RecordCoding {
    /// How payloads write and read `Date`s: Foundation's `JSONEncoder.DateEncodingStrategy`
    /// cases, each written byte for byte as Foundation writes it.
    public enum DateStrategy: String, Sendable, Hashable, CaseIterable {
        /// Foundation's default: the number of seconds since 2001-01-01 UTC
        /// (`timeIntervalSinceReferenceDate`), exact, so a date reads back equal.
        case deferredToDate
        /// An ISO 8601 string in UTC, `2026-12-01T09:30:00Z`. Whole seconds only, as in
        /// Foundation: a date with a fraction of a second reads back without it.
        case iso8601
        /// The number of seconds since 1970-01-01 UTC (`timeIntervalSince1970`).
        case secondsSince1970
        /// The number of milliseconds since 1970-01-01 UTC (`1000 × timeIntervalSince1970`).
        case millisecondsSince1970
    }

    /// How payloads name the members of keyed values.
    public enum KeyStrategy: String, Sendable, Hashable, CaseIterable {
        /// The coding keys as they are (Foundation's `.useDefaultKeys`).
        case useDefaultKeys
        /// `camelCase` keys written as `snake_case` (Foundation's `.convertToSnakeCase`) and
        /// read back with `.convertFromSnakeCase`. As in Foundation, the keys of a
        /// `[String: …]` dictionary are left as they are.
        case snakeCase
    }

    /// The date and key strategies of one collection's payloads. A repository records them
    /// with its collection (format 6, docs/FORMAT.md), so that a later change cannot misread
    /// what was stored.
    public struct Strategies: Sendable, Hashable, CustomStringConvertible {
        /// How dates are written.
        public var dates: DateStrategy
        /// How keys are written.
        public var keys: KeyStrategy

        /// Foundation's defaults: `.deferredToDate` and `.useDefaultKeys`.
        public static let `default` = Strategies()

        /// Strategies for dates and keys; Foundation's defaults unless given.
        public init(dates: DateStrategy = .deferredToDate, keys: KeyStrategy = .useDefaultKeys) {
            self.dates = dates
            self.keys = keys
        }

        /// "dates iso8601, keys snakeCase".
        public var description: String { "dates \(dates.rawValue), keys \(keys.rawValue)" }
    }

    static func foundationStrategy(_ dates: DateStrategy) -> JSONEncoder.DateEncodingStrategy {
        switch dates {
        case .deferredToDate: .deferredToDate
        case .iso8601: .iso8601
        case .secondsSince1970: .secondsSince1970
        case .millisecondsSince1970: .millisecondsSince1970
        }
    }

    static func foundationStrategy(_ dates: DateStrategy) -> JSONDecoder.DateDecodingStrategy {
        switch dates {
        case .deferredToDate: .deferredToDate
        case .iso8601: .iso8601
        case .secondsSince1970: .secondsSince1970
        case .millisecondsSince1970: .millisecondsSince1970
        }
    }
}

/// Marks `[String: Value]`: Foundation leaves the keys of such a dictionary as they are under
/// a key strategy (they are data, not coding keys), and so do the fast coders.
protocol StringKeyedDictionary {}
extension Dictionary: StringKeyedDictionary where Key == String {}

/// Foundation's conversions between camel case and snake case (`JSONEncoder.KeyEncodingStrategy
/// .convertToSnakeCase`, `JSONDecoder.KeyDecodingStrategy.convertFromSnakeCase`), the same
/// algorithm, cached per coder: a record type has few keys, converted once each.
/// `Tests/RecordKeeperTests/Coding/RecordJSONStrategyTests.swift` compares them with
/// Foundation's on many keys.
package final class SnakeCaseKeys {
    private var snake: [String: String] = [:]
    private var camel: [String: String] = [:]
    /// The caches are cleared when they grow past this (keys of untrusted payloads).
    private static let limit = 4_096

    package init() {}

    /// `myURLValue` → `my_url_value`.
    package func snakeCased(_ key: String) -> String {
        // ASCII without capitals is one lower-case word: unchanged.
        if key.utf8.allSatisfy({ $0 < 0x80 && !(0x41...0x5A).contains($0) }) { return key }
        if let known = snake[key] { return known }
        if snake.count >= Self.limit { snake.removeAll() }
        let converted = Self.toSnakeCase(key)
        snake[key] = converted
        return converted
    }

    /// `my_url_value` → `myUrlValue`. A key without `_` is unchanged.
    func camelCased(_ key: String) -> String {
        if !key.utf8.contains(UInt8(ascii: "_")) { return key }
        if let known = camel[key] { return known }
        if camel.count >= Self.limit { camel.removeAll() }
        let converted = Self.fromSnakeCase(key)
        camel[key] = converted
        return converted
    }

    /// Splits words at a change from lower to upper case, and before the last capital of a
    /// run of capitals followed by lower case; joins them lower-cased with `_`.
    static func toSnakeCase(_ key: String) -> String {
        guard !key.isEmpty else { return key }
        var words: [Range<String.Index>] = []
        var wordStart = key.startIndex
        var searchRange = key.index(after: wordStart)..<key.endIndex
        while let upper = key.rangeOfCharacter(from: .uppercaseLetters, options: [], range: searchRange) {
            words.append(wordStart..<upper.lowerBound)
            searchRange = upper.lowerBound..<searchRange.upperBound
            guard let lower = key.rangeOfCharacter(from: .lowercaseLetters, options: [], range: searchRange) else {
                wordStart = searchRange.lowerBound
                break
            }
            let afterCapital = key.index(after: upper.lowerBound)
            if lower.lowerBound == afterCapital {
                wordStart = upper.lowerBound
            } else {
                let beforeLower = key.index(before: lower.lowerBound)
                words.append(upper.lowerBound..<beforeLower)
                wordStart = beforeLower
            }
            searchRange = lower.upperBound..<searchRange.upperBound
        }
        words.append(wordStart..<searchRange.upperBound)
        return words.map { key[$0].lowercased() }.joined(separator: "_")
    }

    /// Keeps leading and trailing underscores; joins the words between the others with the
    /// first lower-cased and the rest capitalized; a single word stays as it is.
    static func fromSnakeCase(_ key: String) -> String {
        guard !key.isEmpty else { return key }
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first && key[last] == "_" { key.formIndex(before: &last) }
        let range = first...last
        let components = key[range].split(separator: "_")
        let joined: String
        if components.count == 1 {
            joined = String(key[range])
        } else {
            joined = ([components[0].lowercased()] + components[1...].map(\.capitalized)).joined()
        }
        return String(key[key.startIndex..<first]) + joined + String(key[key.index(after: last)..<key.endIndex])
    }
}
