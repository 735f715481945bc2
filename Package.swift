// swift-tools-version: 6.2
import PackageDescription

/// Settings every target shares: Swift 6 language mode plus the upcoming features
/// that keep imports and existentials explicit.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Where each target builds. SwiftPM's platform list applies to every target, so:
// - device side, for every platform below: CSQLite, RecordKeeperCoding (Foundation only),
//   RecordKeeperSync (Foundation and the codec), RecordKeeper (SQLite besides),
//   RecordKeeperFeatures, RecordKeeperTestSupport, LearnerKit, HarnessSupport, TestHelpers and
//   the test targets RecordKeeperTests, RecordKeeperSyncTests, RecordKeeperFeaturesTests and
//   LearnerTests (their subprocess tests are `#if os(macOS) || os(Linux)`);
// - server side and tools, macOS and Linux only: CLibPQ, CMicroHTTPD, CCrypto,
//   RecordKeeperPostgres, RecordKeeperRelay, RecordKeeperRelayTool, RecordKeeperTool and every
//   executable (recordkeeper, recordkeeper-relay, recordkeeper-bench, learner,
//   recordkeeper-crashtest, recordkeeper-loadtest), and the test targets that use them. Nothing on
//   the device side depends on them; for iOS, tvOS, watchOS and visionOS build the device-side
//   schemes only (`RecordKeeper`, `RecordKeeperSync`, `RecordKeeperCoding`,
//   `RecordKeeperFeatures`, `RecordKeeperTestSupport`, or the shared scheme
//   `RecordKeeperDevice`, which holds the device-side tests), as `.github/workflows/apple.yml`
//   does.
let package = Package(
    name: "RecordKeeper",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    // What users install. The example app (`learner`), the benchmark (`recordkeeper-bench`), the
    // load test and the crash helper are executable targets, not products: in this package
    // `swift run learner` and `swift build --product recordkeeper-bench` find them all the same
    // (SwiftPM gives a root package's executable targets products of their own).
    products: [
        .library(name: "RecordKeeper", targets: ["RecordKeeper"]),
        .library(name: "RecordKeeperCoding", targets: ["RecordKeeperCoding"]),
        .library(name: "RecordKeeperSync", targets: ["RecordKeeperSync"]),
        .library(name: "RecordKeeperFeatures", targets: ["RecordKeeperFeatures"]),
        // For apps' tests: `failNextCommitForTesting()` and whatever else tests need that the
        // production API should not offer (sqlite-data's SQLiteDataTestSupport is the model).
        .library(name: "RecordKeeperTestSupport", targets: ["RecordKeeperTestSupport"]),
        .library(name: "RecordKeeperPostgres", targets: ["RecordKeeperPostgres"]),
        .executable(name: "recordkeeper", targets: ["recordkeeper"]),
        .library(name: "RecordKeeperRelay", targets: ["RecordKeeperRelay"]),
        .executable(name: "recordkeeper-relay", targets: ["recordkeeper-relay"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // The payload codec on its own: RecordJSONEncoder/RecordJSONDecoder and RecordCoding,
        // Foundation only. RecordKeeper re-exports it.
        .target(
            name: "RecordKeeperCoding",
            swiftSettings: swiftSettings
        ),
        // The sync layer the device and the servers share: the wire types, the RecordSyncServer
        // protocol, the push planner, request validation, live-pull waiters, the compaction
        // horizon, the relay's wire JSON, InMemorySyncServer, and the executor of blocking
        // database work. Foundation and the codec only; RecordKeeper re-exports it.
        .target(
            name: "RecordKeeperSync",
            dependencies: ["RecordKeeperCoding"],
            swiftSettings: swiftSettings
        ),
        // The store, RecordSync (the device side of sync) and HTTPSyncServer. Re-exports
        // RecordKeeperCoding and RecordKeeperSync, so apps import RecordKeeper alone.
        .target(
            name: "RecordKeeper",
            dependencies: ["CSQLite", "RecordKeeperCoding", "RecordKeeperSync"],
            swiftSettings: swiftSettings
        ),
        // The test seams apps' tests use, over RecordKeeper's `package` API; SQLite alone, like
        // RecordKeeper (it builds wherever RecordKeeper does, iOS included).
        .target(
            name: "RecordKeeperTestSupport",
            dependencies: ["RecordKeeper"],
            swiftSettings: swiftSettings
        ),
        // What features build on: LoadState and the observable model over a loading function.
        .target(
            name: "RecordKeeperFeatures",
            dependencies: ["RecordKeeper"],
            swiftSettings: swiftSettings
        ),
        // The example app `learner`: its domain, repositories and commands, as a library so
        // tests can reach them; `learner` itself only calls `Learner.run`.
        .target(
            name: "LearnerKit",
            dependencies: ["RecordKeeper", "RecordKeeperFeatures"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "learner",
            dependencies: ["LearnerKit"],
            swiftSettings: swiftSettings
        ),
        // libpq, for the PostgreSQL sync server. Only RecordKeeperPostgres links it.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The server side of sync: a small libpq connection, the server schema and its
        // migrations, and PostgresSyncServer (RecordSyncServer over PostgreSQL).
        .target(
            name: "RecordKeeperPostgres",
            dependencies: ["RecordKeeperSync", "CLibPQ"],
            swiftSettings: swiftSettings
        ),
        // The small argument parser the command-line tools share (`recordkeeper`,
        // `recordkeeper-relay`).
        .target(
            name: "RecordKeeperCommandLine",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RecordKeeperTool",
            dependencies: ["RecordKeeper", "RecordKeeperCoding", "RecordKeeperPostgres", "RecordKeeperCommandLine"],
            swiftSettings: swiftSettings
        ),
        // libmicrohttpd and OpenSSL's libcrypto, for the sync relay. Server-side only (Linux and
        // macOS): only RecordKeeperRelay links them, never the RecordKeeper library, which stays
        // buildable for iOS with SQLite alone.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // The sync relay: an HTTP server over libmicrohttpd, JWT bearer tokens on libcrypto, and
        // SyncRelay, which serves any RecordSyncServer to devices over HTTP (docs/RELAY.md).
        .target(
            name: "RecordKeeperRelay",
            dependencies: ["RecordKeeperSync", "RecordKeeperCoding", "CMicroHTTPD", "CCrypto"],
            swiftSettings: swiftSettings
        ),
        // The `recordkeeper-relay` command line (migrate, serve, token), as a library for tests.
        .target(
            name: "RecordKeeperRelayTool",
            dependencies: ["RecordKeeperRelay", "RecordKeeperSync", "RecordKeeperPostgres", "RecordKeeperCommandLine"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordkeeper-relay",
            dependencies: ["RecordKeeperRelayTool"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordkeeper",
            dependencies: ["RecordKeeperTool"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordkeeper-bench",
            dependencies: [
                "RecordKeeper", "CSQLite", "RecordKeeperPostgres", "CLibPQ", "RecordKeeperRelay", "HarnessSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // What the harnesses share, tests and executables alike (so it links no Testing): child
        // processes started with posix_spawn, a locked value, a seeded generator.
        .target(
            name: "HarnessSupport",
            swiftSettings: swiftSettings
        ),
        // What this package's test targets share (not a product): temporary directories, gates,
        // locked test state, store kinds, the PostgreSQL test server, subprocesses, raw SQLite
        // connections. It builds on the public test seams of RecordKeeperTestSupport.
        .target(
            name: "TestHelpers",
            dependencies: [
                "RecordKeeper", "RecordKeeperTestSupport", "CSQLite", "HarnessSupport",
                // The PostgreSQL test server (`TestPostgres`), for the server-side test targets only:
                // the device-side ones build for iOS, where libpq does not.
                .target(name: "RecordKeeperPostgres", condition: .when(platforms: [.macOS, .linux])),
            ],
            path: "Tests/TestHelpers",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordKeeperTests",
            dependencies: [
                "RecordKeeper", "RecordKeeperCoding", "RecordKeeperSync", "CSQLite", "RecordKeeperTestSupport", "TestHelpers",
                "HarnessSupport",
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        // The sync layer alone (no store): the relay's wire JSON and live pulls held by a server.
        .testTarget(
            name: "RecordKeeperSyncTests",
            dependencies: ["RecordKeeperSync", "RecordKeeperCoding"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordKeeperFeaturesTests",
            dependencies: ["RecordKeeperFeatures", "RecordKeeper", "RecordKeeperTestSupport", "TestHelpers"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LearnerTests",
            dependencies: [
                "LearnerKit", "RecordKeeperFeatures", "RecordKeeper", "CSQLite", "TestHelpers",
                // The built app, run as a subprocess where there are subprocesses.
                .target(name: "learner", condition: .when(platforms: [.macOS, .linux])),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordKeeperToolTests",
            dependencies: [
                "RecordKeeperTool", "RecordKeeperCommandLine", "RecordKeeper", "RecordKeeperPostgres", "recordkeeper",
                "TestHelpers", "HarnessSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // A helper process for the crash and multi-process tests: performs record-level
        // batches and prints each batch id only after the store confirmed its commit.
        .executableTarget(
            name: "recordkeeper-crashtest",
            dependencies: ["RecordKeeper", "RecordKeeperPostgres", "HarnessSupport"],
            swiftSettings: swiftSettings
        ),
        // The load test of issue 25 (docs/PERFORMANCE.md "Load test"): simulated devices over two
        // relay processes and PostgreSQL servers it starts, restarts and checks; and the latency
        // of a push on one relay to a live pull held on the other.
        .executableTarget(
            name: "recordkeeper-loadtest",
            dependencies: [
                "RecordKeeper", "RecordKeeperPostgres", "RecordKeeperRelay", "RecordKeeperCommandLine", "HarnessSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // Runs against a real PostgreSQL: scripts/with-postgres.sh starts one and exports
        // RECORDKEEPER_TEST_POSTGRES (see docs/SYNC.md).
        .testTarget(
            name: "RecordKeeperPostgresTests",
            dependencies: ["RecordKeeperPostgres", "RecordKeeper", "CLibPQ", "TestHelpers"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordKeeperRelayTests",
            dependencies: [
                "RecordKeeperRelay", "RecordKeeperRelayTool", "RecordKeeper", "RecordKeeperSync", "RecordKeeperPostgres", "CCrypto",
                "recordkeeper-relay", "recordkeeper", "recordkeeper-loadtest", "TestHelpers", "HarnessSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordKeeperReliabilityTests",
            dependencies: [
                "RecordKeeper", "RecordKeeperPostgres", "CSQLite", "recordkeeper-crashtest", "RecordKeeperTestSupport",
                "TestHelpers", "HarnessSupport",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
