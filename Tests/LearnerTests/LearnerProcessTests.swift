// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import Foundation
import TestHelpers
import Testing

/// The built `learner` binary, run end to end in subprocesses.
@Suite struct LearnerProcessTests {
    @Test func `a reader's progress and words survive restarts of the app`() async throws {
        try await withTemporaryDirectory { directory in
            let learner = LearnerRunner(directory: directory)
            let store = ["--store", directory.appendingPathComponent("learner.sqlite").path]

            var result = try await learner.run(["status"] + store)
            #expect(result.status == 0)
            #expect(result.output.contains("Nothing saved yet"))
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("learner.sqlite").path))

            result = try await learner.run(["read", "moby-dick", "--page", "12"] + store)
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "Moby Dick: page 12\n")
            result = try await learner.run(["words", "add", "ballena", "whale"] + store)
            #expect(result.status == 0, "\(result.errors)")
            result = try await learner.run(["words", "add", "perro", "dog"] + store)
            #expect(result.output.contains("You have 2 words."))

            result = try await learner.run(["words", "review", "--count", "1"] + store)
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "ballena → whale\nReviewed 1 of 2 words.\n")

            result = try await learner.run(["read", "moby-dick", "--page=20"] + store)
            #expect(result.output == "Moby Dick: page 20 (was page 12)\n")
            result = try await learner.run(["status"] + store)
            #expect(result.status == 0)
            #expect(result.output.contains("Moby Dick: page 20"))
            #expect(result.output.contains("Words: 2 (1 never reviewed)"))
            #expect(result.output.contains("Next to review: perro, ballena"))
            #expect(result.errors.isEmpty)
        }
    }

    @Test func `help and version work without any usable storage`() async throws {
        try await withTemporaryDirectory { directory in
            let blocker = directory.appendingPathComponent("blocker")
            try Data("x".utf8).write(to: blocker)
            let learner = LearnerRunner(directory: directory, environment: [
                "LEARNER_STORE": blocker.appendingPathComponent("learner.sqlite").path,
            ])
            for arguments in [["--help"], ["-h"], ["help"], ["status", "--help"]] {
                let result = try await learner.run(arguments)
                #expect(result.status == 0, "\(arguments)")
                #expect(result.output.contains("learner read moby-dick --page 12"), "\(arguments)")
            }
            let version = try await learner.run(["--version"])
            #expect(version.status == 0)
            #expect(version.output.hasPrefix("learner "))
            // Without HOME or XDG_DATA_HOME there is no default store: help still works.
            let noHome = try await learner.run(["--help"], environment: ["HOME": "", "LEARNER_STORE": ""])
            #expect(noHome.status == 0)
            let status = try await learner.run(["status"], environment: ["HOME": "", "LEARNER_STORE": ""])
            #expect(status.status == 64)
            #expect(status.errors.contains("LEARNER_STORE"))
        }
    }

    @Test(arguments: ["text file", "another app's SQLite database"])
    func `a store file that is not a RecordKeeper store is refused and left byte for byte`(kind: String) async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("learner.sqlite")
            if kind == "text file" {
                try Data(String(repeating: "my notes, not a store\n", count: 100).utf8).write(to: file)
            } else {
                try rawSQLite(file, "CREATE TABLE recipes(name TEXT); INSERT INTO recipes VALUES('soup')")
            }
            let before = try Data(contentsOf: file)
            let siblings = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            let learner = LearnerRunner(directory: directory)
            for arguments in [["status"], ["words", "add", "ballena", "whale"], ["read", "moby-dick", "--page", "3"],
                              ["words", "review"]] {
                let result = try await learner.run(arguments + ["--store", file.path])
                #expect(result.status == 69, "\(arguments): \(result.errors)")
                #expect(result.errors.contains(file.path), "\(arguments)")
                #expect(result.errors.contains("left this file unchanged"), "\(arguments)")
                #expect(result.output.isEmpty, "\(arguments)")
            }
            #expect(try Data(contentsOf: file) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == siblings)
        }
    }

    @Test func `an unwritable store location is a clear error and nothing is created or moved`() async throws {
        try await withTemporaryDirectory { directory in
            let blocker = directory.appendingPathComponent("data")
            try Data("a file where a directory should be".utf8).write(to: blocker)
            let store = blocker.appendingPathComponent("learner.sqlite").path
            let learner = LearnerRunner(directory: directory)
            for arguments in [["words", "add", "ballena", "whale"], ["read", "moby-dick", "--page", "1"], ["status"]] {
                let result = try await learner.run(arguments + ["--store", store])
                #expect(result.status == 74, "\(arguments): \(result.errors)")
                #expect(result.errors.contains(blocker.path), "\(arguments)")
            }
            // The same through the default location: XDG_DATA_HOME is a file.
            let viaDefault = try await learner.run(["words", "add", "perro", "dog"], environment: ["XDG_DATA_HOME": blocker.path])
            #expect(viaDefault.status == 74, "\(viaDefault.errors)")
            #expect(try Data(contentsOf: blocker) == Data("a file where a directory should be".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["data"])
        }
    }

    @Test(.enabled(if: WriteProtection.isAvailable, WriteProtection.unavailableReason))
    func `a store in a read-only directory is an I/O error naming the directory, and nothing is created`() async throws {
        try await withTemporaryDirectory { directory in
            // chmod for a user, the immutable attribute for root (who ignores permission bits).
            let locked = directory.appendingPathComponent("locked")
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
            try #require(WriteProtection.protect(locked))
            defer { WriteProtection.unprotect(locked) }
            let learner = LearnerRunner(directory: directory)
            let store = locked.appendingPathComponent("learner.sqlite").path
            for arguments in [["words", "add", "ballena", "whale"], ["read", "moby-dick", "--page", "1"]] {
                let result = try await learner.run(arguments + ["--store", store])
                #expect(result.status == 74, "\(arguments): \(result.errors)")
                #expect(result.errors.contains("the directory \(locked.path) is not writable"), "\(arguments): \(result.errors)")
                #expect(result.output.isEmpty, "\(arguments)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: locked.path).isEmpty)
        }
    }

    @Test func `the store comes from --store, then LEARNER_STORE, then the per-user directory created 0700`() async throws {
        try await withTemporaryDirectory { directory in
            let learner = LearnerRunner(directory: directory)
            let fromVariable = directory.appendingPathComponent("variable.sqlite")
            let fromOption = directory.appendingPathComponent("option.sqlite")
            let xdg = directory.appendingPathComponent("xdg")

            let runs = [
                try await learner.run(["words", "add", "uno", "one"], environment: ["LEARNER_STORE": fromVariable.path]),
                try await learner.run(["words", "add", "dos", "two", "--store", fromOption.path],
                                environment: ["LEARNER_STORE": fromVariable.path]),
                try await learner.run(["words", "add", "tres", "three"], environment: ["XDG_DATA_HOME": xdg.path]),
                try await learner.run(["words", "add", "cuatro", "four"]),  // HOME/.local/share
            ]
            for run in runs { #expect(run.status == 0, "\(run.errors)") }

            let lists = [
                try await learner.run(["words", "list"], environment: ["LEARNER_STORE": fromVariable.path]).output,
                try await learner.run(["words", "list", "--store", fromOption.path]).output,
                try await learner.run(["words", "list"], environment: ["XDG_DATA_HOME": xdg.path]).output,
                try await learner.run(["words", "list"]).output,
            ]
            #expect(lists == [
                "uno → one (reviewed 0 times)\n", "dos → two (reviewed 0 times)\n",
                "tres → three (reviewed 0 times)\n", "cuatro → four (reviewed 0 times)\n",
            ])

            let xdgDirectory = xdg.appendingPathComponent("learner")
            #expect(try permissions(of: xdgDirectory) == 0o700)
            #expect(FileManager.default.fileExists(atPath: xdgDirectory.appendingPathComponent("learner.sqlite").path))
            let homeDirectory = learner.home.appendingPathComponent(".local/share/learner")
            #expect(try permissions(of: homeDirectory) == 0o700)
            #expect(FileManager.default.fileExists(atPath: homeDirectory.appendingPathComponent("learner.sqlite").path))
        }
    }

    @Test func `bad command lines exit 64 without touching the store`() async throws {
        try await withTemporaryDirectory { directory in
            let learner = LearnerRunner(directory: directory)
            let store = directory.appendingPathComponent("learner.sqlite").path
            for arguments in [[], ["bogus"], ["read"], ["read", "moby-dick", "--page", "0"], ["read", "../x", "--page", "1"],
                              ["words"], ["words", "add", "ballena"], ["status", "--frobnicate"], ["status", "--page", "2"]] {
                let result = try await learner.run(arguments + ["--store", store])
                #expect(result.status == 64, "\(arguments)")
                #expect(result.errors.contains("learner --help"), "\(arguments)")
            }
            #expect(!FileManager.default.fileExists(atPath: store))
        }
    }
}

#endif
