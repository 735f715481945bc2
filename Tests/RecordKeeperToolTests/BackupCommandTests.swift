import RecordKeeperTestSupport
import Foundation
import Testing

/// `backup DEST [--overwrite]`.
@Suite struct BackupCommandTests {
    @Test func `backup writes a private copy that passes check and holds the same records`() throws {
        try withTool { tool throws in
            try tool.runOnStore(["put", "users", "alice", #"{"name":"Alice"}"#])
            try tool.runOnStore(["put", "users", "n", "-5"])
            let destination = tool.directory.appendingPathComponent("copy.sqlite").path
            let result = try tool.runOnStore(["backup", destination])
            #expect(result.status == 0)
            #expect(result.output == "backed up \(tool.storePath) to \(destination)\n")
            let attributes = try FileManager.default.attributesOfItem(atPath: destination)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(!FileManager.default.fileExists(atPath: destination + "-wal"))

            let check = try tool.run(["--store", destination, "check"])
            #expect(check.status == 0)
            #expect(check.output.hasPrefix("integrity: ok\n"))
            #expect(try tool.run(["--store", destination, "list", "users", "--values"]).output
                    == (try tool.runOnStore(["list", "users", "--values"])).output)
        }
    }

    @Test func `backup refuses an existing file with exit 73 unless given --overwrite`() throws {
        try withTool { tool throws in
            try tool.runOnStore(["put", "c", "k", "1"])
            let destination = try tool.file("taken.sqlite", "keep me")
            let refused = try tool.runOnStore(["backup", destination])
            #expect(refused.status == 73)
            #expect(refused.stderr == "recordkeeper: \(destination) already exists; it was left as it is "
                    + "(give --overwrite to replace it)\n")
            #expect(try String(contentsOfFile: destination, encoding: .utf8) == "keep me")

            #expect(try tool.runOnStore(["backup", destination, "--overwrite"]).status == 0)
            #expect(try tool.run(["--store", destination, "get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `backup onto the store itself is refused and leaves it unchanged`() throws {
        try withTool { tool throws in
            try tool.runOnStore(["put", "c", "k", "1"])
            let result = try tool.runOnStore(["backup", tool.storePath, "--overwrite"])
            #expect(result.status == 73)
            #expect(result.stderr.contains("is the store's own file"))
            #expect(try tool.runOnStore(["get", "c", "k"]).output == "1\n")
        }
    }

    @Test func `backup of a missing store exits 66 and creates nothing`() throws {
        try withTool { tool throws in
            let destination = tool.directory.appendingPathComponent("copy.sqlite").path
            let result = try tool.runOnStore(["backup", destination])
            #expect(result.status == 66)
            #expect(!FileManager.default.fileExists(atPath: tool.storePath))
            #expect(!FileManager.default.fileExists(atPath: destination))
        }
    }
}
