import TestHelpers
import HarnessSupport
import Foundation
import Testing
@testable import RecordKeeper

/// Migrations between processes, on the committed fixture stores (docs/FORMAT.md
/// "Migrations"): two processes opening an older store at once both succeed and migrate it
/// once; a process killed with SIGKILL while it migrates leaves a format some step produced,
/// whole (never a mix), which the next opening migrates on with every record intact.
@Suite struct MigrationProcessTests {
    /// A committed fixture of RecordKeeperTests (Tests/RecordKeeperTests/Fixtures).
    static func fixture(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("RecordKeeperTests/Fixtures/\(name).sqlite")
    }

    /// A fresh copy of a fixture in `directory`.
    static func copy(_ name: String, into directory: URL, as copyName: String) throws -> URL {
        let url = directory.appendingPathComponent(copyName)
        try FileManager.default.copyItem(at: fixture(name), to: url)
        return url
    }

    /// Everything a store holds, as its API reads it.
    struct StoreState: Equatable {
        var records: [String: [String: Data]] = [:]
        var pending: [UUID] = []
        var deadLetters: [UUID] = []
        var sync: SyncStatus?
        var conflicts: [SyncRecordConflict] = []
    }

    /// Opens the store at `url` for writing (migrating it), reads everything, and closes it.
    static func state(of url: URL) async throws -> (state: StoreState, found: Int) {
        let found = Protected<Int?>(nil)
        let store = RecordStore(url: url, options: .init(eventHandler: { event in
            if case .opened(let timings) = event { found.withLock { $0 = timings.formatVersionFound } }
        }))
        try await store.write { _ in }
        var state = StoreState()
        for collection in try await store.collections() {
            state.records[collection.name] = try await store.read(collection.name)
        }
        state.pending = try await store.outbox.pending().map(\.id)
        state.deadLetters = try await store.outbox.deadLetters().map(\.id)
        state.sync = try await store.syncStatus()
        state.conflicts = try await store.syncConflicts()
        #expect(try await store.integrityCheck() == ["ok"])
        await store.close()
        return (state, try #require(found.withLock { $0 }))
    }

    /// The format and the schema objects (type and name) of the file at `url`, read raw.
    static func format(of url: URL) throws -> (version: Int, schema: Set<String>) {
        let connection = try SQLiteConnection(path: url.path, busyTimeout: .seconds(60))
        return (try connection.userVersion(), try schema(of: connection))
    }

    /// The indexes of declared fields (format 7, `declared_<id>_<field>`) are a store's data,
    /// one per declared index, not objects of its format: they are left out.
    static func schema(of connection: SQLiteConnection) throws -> Set<String> {
        try connection.withStatement(
            """
            SELECT type, name FROM sqlite_master
            WHERE name NOT LIKE 'sqlite_%' AND NOT (type = 'index' AND name LIKE 'declared\\_%' ESCAPE '\\')
            """
        ) { statement in
            var names = Set<String>()
            while try statement.step() { names.insert("\(statement.string(at: 0)) \(statement.string(at: 1))") }
            return names
        }
    }

    /// The schema objects a store of `version` has: its migration steps run on an empty database.
    static func expectedSchema(version: Int) throws -> Set<String> {
        let connection = try SQLiteConnection(path: nil, busyTimeout: .zero)
        try Migrator.run(
            Array(StoreFormat.migrations.prefix(version)), on: connection, from: 0, applicationID: StoreFormat.applicationID)
        return try schema(of: connection)
    }

    /// A helper in `migrate` mode on `url`.
    static func migrator(_ url: URL, in directory: URL, go: URL? = nil) throws -> ChildProcess {
        let helper = try #require(BuildProducts.crashHelper, "recordkeeper-crashtest not found next to the tests")
        return try ChildProcess(
            executable: helper,
            arguments: ["migrate", "--store", url.path, "--busy-timeout", "60"] + (go.map { ["--go", $0.path] } ?? []),
            in: directory)
    }

    /// The `found` and `format` a helper printed when it opened the store.
    static func opened(_ child: ChildProcess) throws -> (found: Int, format: Int)? {
        guard let line = try child.output().split(separator: "\n").first(where: { $0.hasPrefix("opened ") }) else { return nil }
        let fields = Dictionary(uniqueKeysWithValues: line.dropFirst(7).split(separator: " ").map { field in
            let parts = field.split(separator: "=")
            return (String(parts[0]), Int(parts[1]) ?? -1)
        })
        return (fields["found"] ?? -1, fields["format"] ?? -1)
    }

    static let olderFixtures = (1..<StoreFormat.currentVersion).map { "format-\($0)" }

    @Test(arguments: olderFixtures)
    func `two processes migrating an older store at once both succeed and migrate it once`(fixture: String) async throws {
        try await withTemporaryDirectory { directory in
            let version = Int(fixture.dropFirst(7))!
            let expected = try await Self.state(of: Self.copy(fixture, into: directory, as: "reference.sqlite"))
            #expect(expected.found == version)
            let url = try Self.copy(fixture, into: directory, as: "shared.sqlite")
            #expect(try Self.format(of: url).version == version)
            // Another connection holds the write lock while both start, so neither can migrate
            // before the other has begun: both open the old format, one runs each step, the other
            // finds it done inside its own transaction and skips it.
            let lock = try ForeignWriteLock(url)
            let children = try (0..<2).map { _ in try Self.migrator(url, in: directory) }
            for child in children { try child.start() }
            for child in children { try await child.waitForLine { $0 == "opening" } }
            lock.release()
            var founds: [Int] = []
            for child in children {
                await child.waitForExit()
                let (output, errors) = (try child.output(), try child.errorOutput())
                #expect(child.process.terminationStatus == 0, "\(errors)")
                let opened = try #require(try Self.opened(child), "\(output)")
                #expect(opened.format == StoreFormat.currentVersion)
                founds.append(opened.found)
            }
            #expect(founds.allSatisfy { $0 == version || $0 == StoreFormat.currentVersion }, "\(founds)")
            #expect(founds.contains(version), "neither process migrated: \(founds)")
            let after = try Self.format(of: url)
            #expect(after.version == StoreFormat.currentVersion)
            #expect(after.schema == (try Self.expectedSchema(version: StoreFormat.currentVersion)))
            let migrated = try await Self.state(of: url)
            #expect(migrated.found == StoreFormat.currentVersion, "the processes left it migrated")
            #expect(migrated.state == expected.state, "every record, operation and sync state kept, once")
            reportFigure("migration \(fixture) by two processes at once: formats found \(founds), both succeeded")
        }
    }

    /// Kills per run of the random part: 16 (RECORDKEEPER_MIGRATION_KILLS=n to change).
    static let kills = Int(environmentInteger("RECORDKEEPER_MIGRATION_KILLS") ?? (isLongMode ? 100 : 16))

    @Test func `a process killed while it migrates leaves a whole format, and the next opening goes on`() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = "format-1"
            let expected = try await Self.state(of: Self.copy(fixture, into: directory, as: "reference.sqlite")).state
            var schemas: [Int: Set<String>] = [:]
            for version in 1...StoreFormat.currentVersion { schemas[version] = try Self.expectedSchema(version: version) }
            var outcomes: [String] = []

            /// Checks a killed run's file: a whole format of some step, then the full migration.
            func verify(_ url: URL, _ what: String, expecting version: Int? = nil) async throws {
                let left = try Self.format(of: url)
                if let version { #expect(left.version == version, "\(what)") }
                #expect((1...StoreFormat.currentVersion).contains(left.version), "\(what): format \(left.version)")
                #expect(left.schema == schemas[left.version], "\(what): format \(left.version) with another format's schema")
                let reopened = try await Self.state(of: url)
                #expect(reopened.found == left.version)
                #expect(reopened.state == expected, "\(what): the next opening lost or changed something")
                outcomes.append("\(what) → format \(left.version)")
            }

            // Before the first step: the write lock is held elsewhere, so nothing is written.
            do {
                let url = try Self.copy(fixture, into: directory, as: "before.sqlite")
                let lock = try ForeignWriteLock(url)
                let child = try Self.migrator(url, in: directory)
                try child.start()
                try await child.waitForLine { $0 == "opening" }
                child.kill()
                await child.waitForExit()
                lock.release()
                try await verify(url, "killed waiting for the first step", expecting: 1)
            }

            // After the last step, during the checkpoint that carries the new format into the
            // main file: an older read snapshot holds that checkpoint, and the raw file already
            // shows the new format (committed to the log) when the helper is killed.
            do {
                let url = try Self.copy(fixture, into: directory, as: "checkpoint.sqlite")
                let snapshot = try ForeignReadSnapshot(url)
                let child = try Self.migrator(url, in: directory)
                try child.start()
                try await waitUntil("the helper committed every step") {
                    try Self.format(of: url).version == StoreFormat.currentVersion
                }
                child.kill()
                await child.waitForExit()
                #expect(try Self.opened(child) == nil, "the helper finished opening although a reader held its checkpoint")
                snapshot.release()
                try await verify(url, "killed in the checkpoint after the steps", expecting: StoreFormat.currentVersion)
            }

            // At random moments of the opening: inside a step, between steps, in the checkpoint.
            var timing = SplitMix64(seed: environmentInteger("RECORDKEEPER_CRASH_SEED") ?? 20_261_201)
            for run in 0..<Self.kills {
                let url = try Self.copy(fixture, into: directory, as: "random-\(run).sqlite")
                let child = try Self.migrator(url, in: directory)
                try child.start()
                try await child.waitForLine { $0 == "opening" }
                try await Task.sleep(for: .microseconds(timing.below(20_000)))
                child.kill()
                await child.waitForExit()
                try await verify(url, "killed \(Self.opened(child) == nil ? "while opening" : "after opening")")
            }
            let counts = Dictionary(grouping: outcomes.dropFirst(2), by: { $0.hasSuffix("format \(StoreFormat.currentVersion)") ? "migrated" : String($0.split(separator: " ").last!) })
                .mapValues(\.count)
            reportFigure("migration kills: 2 at fixed points, \(Self.kills) at random moments of the opening; formats left \(counts), 0 mixed, 0 lost")
        }
    }
}
