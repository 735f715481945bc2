import Foundation

/// The implementations compared in every workload.
enum Implementation: String, CaseIterable, Sendable, Codable {
    case raw = "raw"
    case recordKeeper = "RecordKeeper"
    case naive = "naive"

    /// The order of the implementations in repeat `index`: rotated so that none of them
    /// always runs first (or right after another one's garbage).
    static func order(forRepeat index: Int) -> [Implementation] {
        let all = allCases
        let shift = index % all.count
        return Array(all[shift...] + all[..<shift])
    }
}

/// One figure: the median over the repeats of one metric of one implementation.
struct ResultRow: Codable, Sendable {
    var workload: String
    /// Sub-case of the workload: durability for W2/T2/W7, `read`/`export` for W6, "" otherwise.
    var variant: String
    var n: Int
    var implementation: String
    var metric: String
    var value: Double
    /// value / raw (for throughput metrics raw / value), so > 1 always means slower or bigger.
    var ratioToRaw: Double?
    /// Measurements the median was taken over.
    var samples: Int
    var note: String?

    /// Throughput metrics are better when higher; everything else (times, bytes) when lower.
    static func higherIsBetter(_ metric: String) -> Bool {
        metric.hasSuffix("_per_s")
    }
}

enum ResultFormatter {
    /// Fills `ratioToRaw` of every non-raw row that has a raw twin.
    static func computeRatios(_ rows: [ResultRow]) -> [ResultRow] {
        var raw: [String: Double] = [:]
        func id(_ row: ResultRow) -> String { "\(row.workload)|\(row.variant)|\(row.n)|\(row.metric)" }
        for row in rows where row.implementation == Implementation.raw.rawValue { raw[id(row)] = row.value }
        return rows.map { row in
            var row = row
            if row.implementation != Implementation.raw.rawValue, let base = raw[id(row)], base > 0, row.value > 0 {
                row.ratioToRaw = ResultRow.higherIsBetter(row.metric) ? base / row.value : row.value / base
            }
            return row
        }
    }

    static func json(_ rows: [ResultRow], header: [String: String]) throws -> String {
        struct Document: Encodable {
            let run: [String: String]
            let results: [ResultRow]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Document(run: header, results: rows))
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func csv(_ rows: [ResultRow]) -> String {
        var lines = ["workload,variant,n,implementation,metric,value,ratio_to_raw,samples,note"]
        for row in rows {
            let fields = [
                row.workload, row.variant, String(row.n), row.implementation, row.metric,
                format(row.value), row.ratioToRaw.map { String(format: "%.4f", $0) } ?? "",
                String(row.samples), row.note ?? "",
            ]
            lines.append(fields.map(escape).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escape(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(format: "%.6g", value)
    }

    /// Human-readable figures with three significant digits.
    static func short(_ value: Double) -> String {
        if value.isNaN { return "-" }
        let magnitude = abs(value)
        if magnitude >= 100 { return String(format: "%.0f", value) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        if magnitude >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3g", value)
    }

    /// One line per (workload, variant, N, metric) with the three implementations side by side.
    static func table(_ rows: [ResultRow]) -> String {
        struct Line {
            var workload: String, variant: String, n: Int, metric: String
            var values: [String: ResultRow] = [:]
        }
        var lines: [Line] = []
        var index: [String: Int] = [:]
        let compared = Set(Implementation.allCases.map(\.rawValue))
        let others = rows.filter { !compared.contains($0.implementation) }
        for row in rows where compared.contains(row.implementation) {
            let id = "\(row.workload)|\(row.variant)|\(row.n)|\(row.metric)"
            if let position = index[id] {
                lines[position].values[row.implementation] = row
            } else {
                index[id] = lines.count
                lines.append(Line(workload: row.workload, variant: row.variant, n: row.n, metric: row.metric,
                                  values: [row.implementation: row]))
            }
        }
        let headers = ["workload", "variant", "N", "metric", "raw", "RecordKeeper", "RK/raw", "naive", "naive/raw", "samples (raw/RK/naive)"]
        var table: [[String]] = [headers]
        for line in lines {
            let raw = line.values[Implementation.raw.rawValue]
            let rk = line.values[Implementation.recordKeeper.rawValue]
            let naive = line.values[Implementation.naive.rawValue]
            func ratio(_ row: ResultRow?) -> String {
                guard let value = row?.ratioToRaw else { return "-" }
                return String(format: "%.2f", value)
            }
            table.append([
                line.workload, line.variant, String(line.n), line.metric,
                raw.map { short($0.value) } ?? "-",
                rk.map { short($0.value) } ?? "-", ratio(rk),
                naive.map { short($0.value) } ?? "-", ratio(naive),
                [raw, rk, naive].map { $0.map { String($0.samples) } ?? "-" }.joined(separator: "/"),
            ])
        }
        let widths = headers.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        var text = ""
        for (rowIndex, cells) in table.enumerated() {
            let padded = cells.enumerated().map { column, cell in
                column < 4 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            text += padded.joined(separator: "  ") + "\n"
            if rowIndex == 0 {
                text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
            }
        }
        if !others.isEmpty {
            text += "\nother measurements:\n"
            for row in others {
                text += "  \(row.workload) \(row.variant) N=\(row.n) \(row.implementation): \(row.metric) = \(short(row.value))"
                    + " (\(row.samples) samples)\n"
            }
        }
        let notes = Set(rows.compactMap { row in row.note.map { "\(row.workload) \(row.implementation): \($0)" } })
        if !notes.isEmpty {
            text += "\nnotes:\n" + notes.sorted().map { "  - " + $0 }.joined(separator: "\n") + "\n"
        }
        return text
    }
}
