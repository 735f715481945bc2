extension RecordCoding.Strategies {
    /// The form stored in `collections.payload_coding`: nil for the defaults (so stores
    /// written before format 6 and repositories with the defaults agree), else
    /// `dates=<strategy>;keys=<strategy>`.
    var recorded: String? {
        self == .default ? nil : "dates=\(dates.rawValue);keys=\(keys.rawValue)"
    }

    /// The strategies a stored `payload_coding` names; nil for a text this library does
    /// not know (written by a newer version).
    init?(recorded: String?) {
        guard let recorded else {
            self = .default
            return
        }
        var dates: RecordCoding.DateStrategy?, keys: RecordCoding.KeyStrategy?
        for part in recorded.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return nil }
            switch pair[0] {
            case "dates": dates = RecordCoding.DateStrategy(rawValue: pair[1])
            case "keys": keys = RecordCoding.KeyStrategy(rawValue: pair[1])
            default: return nil
            }
        }
        guard let dates, let keys else { return nil }
        self.init(dates: dates, keys: keys)
    }
}
