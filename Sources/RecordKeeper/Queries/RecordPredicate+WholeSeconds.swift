import Foundation

extension RecordPredicate {
    /// The predicate with every `.date` written by `coder`, whose date strategy is `dates`;
    /// under `.iso8601` its bounds first move to whole seconds (``overWholeSeconds()``). The
    /// one way both a repository's typed predicates and the store's untyped ones write dates.
    func writingDates(with coder: PayloadCoder, dates: RecordCoding.DateStrategy) throws -> RecordPredicate {
        let predicate = dates == .iso8601 ? overWholeSeconds() : self
        return try predicate.mapped(field: { $0 }, value: { try $0.resolved(with: coder, field: $1) })
    }

    /// The predicate for a collection whose dates keep whole seconds only (the `.iso8601`
    /// strategy writes no fraction): each date bound with a fraction of a second becomes the
    /// whole second that gives the same answer for every stored date, so that no item comes
    /// back whose date fails the predicate the app wrote. `>= 1.9` and `> 1.9` are `>= 2`;
    /// `<= 1.9` and `< 1.9` are `<= 1`; `== 1.9` holds for no date and `!= 1.9` for every
    /// record; `between` narrows to the whole seconds inside; `in` drops such dates; `contains`
    /// of such a date holds for no record (no element equals it).
    func overWholeSeconds() -> RecordPredicate {
        switch self {
        case .compare(let path, let comparison, .date(let date)):
            guard let (below, above) = Self.wholeSeconds(around: date) else { return self }
            switch comparison {
            case .greater, .greaterOrEqual: return .compare(path, .greaterOrEqual, .date(above))
            case .less, .lessOrEqual: return .compare(path, .lessOrEqual, .date(below))
            case .equal: return Self.strictlyBetween(path, below, above)
            case .notEqual: return .not(Self.strictlyBetween(path, below, above))
            }
        case .between(let path, let lower, let upper):
            var (lower, upper) = (lower, upper)
            if case .date(let date) = lower, let (_, above) = Self.wholeSeconds(around: date) { lower = .date(above) }
            if case .date(let date) = upper, let (below, _) = Self.wholeSeconds(around: date) { upper = .date(below) }
            return .between(path, lower, upper)
        case .isIn(let path, let values):
            let kept = values.filter { value in
                guard case .date(let date) = value else { return true }
                return Self.wholeSeconds(around: date) == nil
            }
            guard kept.isEmpty, case .date(let date)? = values.first, let (below, above) = Self.wholeSeconds(around: date) else {
                return .isIn(path, kept)
            }
            return Self.strictlyBetween(path, below, above)  // no value can match
        case .contains(_, .date(let date)) where Self.wholeSeconds(around: date) != nil:
            return .or([])
        case .and(let all): return .and(all.map { $0.overWholeSeconds() })
        case .or(let all): return .or(all.map { $0.overWholeSeconds() })
        case .not(let inner): return .not(inner.overWholeSeconds())
        case .compare, .hasPrefix, .contains, .isNull: return self
        }
    }

    /// The whole seconds on either side of `date`, or nil when it is a whole second.
    private static func wholeSeconds(around date: Date) -> (below: Date, above: Date)? {
        let seconds = date.timeIntervalSince1970
        let below = seconds.rounded(.down)
        guard below != seconds, seconds.isFinite else { return nil }
        return (Date(timeIntervalSince1970: below), Date(timeIntervalSince1970: below + 1))
    }

    /// Holds for no record: no whole second lies strictly between two neighbouring ones, and
    /// a record without the field fails both comparisons.
    private static func strictlyBetween(_ path: FieldPath, _ below: Date, _ above: Date) -> RecordPredicate {
        .and([.compare(path, .greater, .date(below)), .compare(path, .less, .date(above))])
    }
}
