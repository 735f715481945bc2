import Foundation
import RecordKeeper

/// Output formats of the results.
enum OutputFormat: String, Sendable {
    case table, json, csv
}

/// Every workload the bench knows. `T*` are the typed-repository twins of `W1`...`W4`.
enum WorkloadID: String, Sendable, CaseIterable, Comparable {
    case w1 = "W1", w2 = "W2", w3 = "W3", w4 = "W4", w5 = "W5", w6 = "W6", w7 = "W7", w8 = "W8"
    case w9 = "W9"
    case t1 = "T1", t2 = "T2", t3 = "T3", t4 = "T4"
    case c1 = "C1"
    case o1 = "O1", o2 = "O2"
    case q1 = "Q1", q2 = "Q2", q3 = "Q3"
    case s1 = "S1", s2 = "S2", s3 = "S3", s4 = "S4", s5 = "S5", s6 = "S6", s7 = "S7", s8 = "S8"
    case s9 = "S9", s10 = "S10"

    static func < (lhs: WorkloadID, rhs: WorkloadID) -> Bool {
        let order = allCases
        return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
    }

    var title: String {
        switch self {
        case .w1: "bulk insert of N records in one transaction"
        case .w2: "single-record upserts, one commit each, into a store holding N"
        case .w3: "read the whole collection"
        case .w4: "random point reads"
        case .w5: "cold open + first read in a fresh process"
        case .w6: "peak resident memory (child process)"
        case .w7: "scaling of W2 latency and W3 throughput"
        case .w8: "random point reads while another process commits single saves"
        case .w9: "change stream: another process's commit to the stream's yield"
        case .t1: "typed: bulk save of N items"
        case .t2: "typed: single-item saves, one commit each"
        case .t3: "typed: load the whole collection"
        case .t4: "typed: random item(id) reads"
        case .c1: "codec cost: Foundation JSON vs a specialised Item codec"
        case .o1: "outbox: apply of 1 record + 1 enqueue vs apply alone"
        case .o2: "outbox: deliverDue of a backlog of queued operations (no-op transport)"
        case .q1: "queries: the 20 newest items by an indexed field, decoded, vs raw SQLite and vs load-all-then-filter"
        case .q2: "queries: count of a range (10% of N) on an indexed field vs raw SQLite"
        case .q3: "queries: single saves into a collection with two declared indexes vs none, p50"
        case .s1: "sync: push N records through PostgresSyncServer vs raw libpq batches of 1,000"
        case .s2: "sync: pull N records in pages of 1,000 vs raw libpq keyset pages"
        case .s3: "sync: RecordSync uploads N records from a local store through PostgreSQL vs raw libpq batches of 1,000"
        case .s4: "sync: a fresh device pulls N records through RecordSync into its store vs raw libpq keyset pages"
        case .s5: "sync: push N records into a new space of a server holding 600,000 rows of other spaces vs an empty server"
        case .s6: "sync: push and pull N records through the relay (HTTPSyncServer, loopback) vs direct PostgresSyncServer"
        case .s7: "sync: one-record push round trip through the relay vs direct PostgresSyncServer, p50/p99"
        case .s8: "sync: pull of one collection holding 10% of a space's N changes, by collection vs every collection"
        case .s9: "sync: live wake across servers, NOTIFY (listen) vs polling the counters: push throughput, wake p50/p99"
        case .s10: "sync: 1,000 live pulls held on one relay process: its RSS and threads, all answered"
        }
    }

    var isTyped: Bool { rawValue.hasPrefix("T") }

    /// The sync rows, which run only with a PostgreSQL server.
    var needsPostgres: Bool { rawValue.hasPrefix("S") }
}

/// Parsed command line of the bench (`recordkeeper-bench --help` for the list).
struct BenchOptions: Sendable {
    var n = 100_000
    var repeats = 5
    var workloads: [WorkloadID] = WorkloadID.allCases
    var format: OutputFormat = .table
    var output: String?
    /// Format of `output`: from its extension (.json/.csv), else `format`.
    var outputFormat: OutputFormat = .table
    var durability: Durability = .normal
    var quick = false
    /// Single upserts per repeat in W2/T2 and the W7 latency curve.
    var upserts = 1_000
    /// Point reads per repeat in W4/T4.
    var pointReads = 10_000
    /// Store sizes of the W7 curves.
    var scalingSizes = [1_000, 10_000, 100_000, 1_000_000]
    /// Largest N at which the naive store still runs in W7 (it rewrites everything per save).
    var naiveMaxN = 100_000
    /// Wall-clock budget in seconds for the naive store's single saves per measurement.
    var naiveBudget = 5.0
    /// Directory for the stores; a fresh temporary directory when nil.
    var directory: String?
    /// Implementations to run (all by default; a subset is for profiling one side).
    var implementations: Set<Implementation> = Set(Implementation.allCases)
    var keepFiles = false
    /// The PostgreSQL server of S1/S2 (libpq conninfo): `--postgres`, else
    /// `RECORDKEEPER_TEST_POSTGRES`; without one, S1/S2 do not run.
    var postgres: String?
    var verbose = true

    static let usage = """
    usage: recordkeeper-bench [options]

      --n N                 records in the store (default 100000)
      --repeat R            repeats per workload; medians are reported (default 5)
      --workloads LIST      comma-separated subset of W1..W9,T1..T4,C1,O1,O2,Q1..Q3,S1..S10 (default: all
                            available; S1..S10 only with a PostgreSQL server)
      --postgres CONNINFO   PostgreSQL server for S1..S10 (default: RECORDKEEPER_TEST_POSTGRES;
                            scripts/with-postgres.sh starts a throwaway one and sets it). The
                            bench creates and drops the schema recordkeeper_bench there.
      --format F            table | json | csv (default table)
      --output FILE         also write the results to FILE (JSON or CSV by its extension
                            .json/.csv, otherwise in the --format format)
      --durability D        normal | full for every workload except W2/T2, which run both
                            (default normal)
      --quick               CI smoke run: N=2000, 1 repeat, small W7 sizes, fewer operations
      --upserts K           single-record saves per repeat in W2/T2/W7 (default 1000)
      --point-reads K       point reads per repeat in W4/T4 (default 10000)
      --sizes LIST          W7 store sizes (default 1000,10000,100000,1000000)
      --naive-max-n N       largest W7 size the naive store runs at (default 100000)
      --naive-budget SEC    time budget per naive single-save measurement (default 5)
      --impls LIST          run only these of raw,RecordKeeper,naive (for profiling)
      --dir PATH            where to create the stores (default: a fresh temp directory)
      --keep                keep the store files afterwards
      --quiet               no progress lines on stderr
    """

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var explicitN: Int?
        var explicitRepeats: Int?
        var explicitSizes: [Int]?
        var explicitUpserts: Int?
        var explicitReads: Int?
        var explicitBudget: Double?
        var explicitWorkloads = false
        var index = 0

        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw ParseError(description: "\(flag) needs a value") }
            return arguments[index]
        }
        func positiveInt(_ flag: String) throws -> Int {
            let text = try value(flag)
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else {
                throw ParseError(description: "\(flag) expects a positive integer, got '\(text)'")
            }
            return number
        }
        func intList(_ flag: String) throws -> [Int] {
            let text = try value(flag)
            let numbers = text.split(separator: ",").compactMap { Int($0.replacingOccurrences(of: "_", with: "")) }
            guard !numbers.isEmpty, numbers.allSatisfy({ $0 > 0 }) else {
                throw ParseError(description: "\(flag) expects comma-separated positive integers, got '\(text)'")
            }
            return numbers
        }

        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--n": explicitN = try positiveInt(argument)
            case "--repeat", "--repeats": explicitRepeats = try positiveInt(argument)
            case "--workloads":
                let text = try value(argument)
                var chosen: [WorkloadID] = []
                for name in text.split(separator: ",") {
                    guard let id = WorkloadID(rawValue: name.trimmingCharacters(in: .whitespaces).uppercased()) else {
                        throw ParseError(description: "unknown workload '\(name)' (known: \(WorkloadID.allCases.map(\.rawValue).joined(separator: ",")))")
                    }
                    if !chosen.contains(id) { chosen.append(id) }
                }
                options.workloads = chosen.sorted()
                explicitWorkloads = true
            case "--format":
                let text = try value(argument)
                guard let format = OutputFormat(rawValue: text.lowercased()) else {
                    throw ParseError(description: "--format expects table, json or csv, got '\(text)'")
                }
                options.format = format
            case "--output": options.output = try value(argument)
            case "--durability":
                let text = try value(argument)
                guard let durability = Durability(rawValue: text.lowercased()) else {
                    throw ParseError(description: "--durability expects normal or full, got '\(text)'")
                }
                options.durability = durability
            case "--quick": options.quick = true
            case "--upserts": explicitUpserts = try positiveInt(argument)
            case "--point-reads": explicitReads = try positiveInt(argument)
            case "--sizes": explicitSizes = try intList(argument)
            case "--naive-max-n": options.naiveMaxN = try positiveInt(argument)
            case "--naive-budget":
                let text = try value(argument)
                guard let seconds = Double(text), seconds > 0 else {
                    throw ParseError(description: "--naive-budget expects seconds, got '\(text)'")
                }
                explicitBudget = seconds
            case "--impls":
                let text = try value(argument)
                var chosen: Set<Implementation> = []
                for name in text.split(separator: ",") {
                    guard let implementation = Implementation.allCases.first(where: {
                        $0.rawValue.lowercased() == name.lowercased() || (name.lowercased() == "rk" && $0 == .recordKeeper)
                    }) else {
                        throw ParseError(description: "unknown implementation '\(name)' (known: raw, RecordKeeper, naive)")
                    }
                    chosen.insert(implementation)
                }
                options.implementations = chosen
            case "--dir": options.directory = try value(argument)
            case "--keep": options.keepFiles = true
            case "--postgres": options.postgres = try value(argument)
            case "--quiet": options.verbose = false
            case "-h", "--help": throw ParseError(description: usage)
            default: throw ParseError(description: "unknown argument '\(argument)'\n\n\(usage)")
            }
            index += 1
        }

        if options.postgres == nil, let conninfo = ProcessInfo.processInfo.environment["RECORDKEEPER_TEST_POSTGRES"],
            !conninfo.isEmpty
        {
            options.postgres = conninfo
        }
        if options.postgres == nil {
            if explicitWorkloads, options.workloads.contains(where: \.needsPostgres) {
                throw ParseError(description: "S1..S10 need a PostgreSQL server: --postgres CONNINFO or RECORDKEEPER_TEST_POSTGRES")
            }
            options.workloads.removeAll(where: \.needsPostgres)
        }
        if options.quick {
            options.n = 2_000
            options.repeats = 1
            options.upserts = 200
            options.pointReads = 2_000
            options.scalingSizes = [500, 2_000]
            options.naiveBudget = 2
        }
        if let explicitN { options.n = explicitN }
        if let explicitRepeats { options.repeats = explicitRepeats }
        if let explicitSizes { options.scalingSizes = explicitSizes }
        if let explicitUpserts { options.upserts = explicitUpserts }
        if let explicitReads { options.pointReads = explicitReads }
        if let explicitBudget { options.naiveBudget = explicitBudget }
        if let output = options.output {
            if output.hasSuffix(".json") {
                options.outputFormat = .json
            } else if output.hasSuffix(".csv") {
                options.outputFormat = .csv
            } else {
                options.outputFormat = options.format
            }
        }
        return options
    }
}
