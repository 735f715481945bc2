import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import RecordKeeper
import Testing
@testable import RecordKeeperTool

/// What `sync` asks of `RecordSync`, decided from the command line and the store's recorded
/// settings before anything is reached or written.
@Suite struct SyncCommandPlanTests {
    private static let status = SyncStatus(
        space: "alice", device: "D", collections: ["notes": .report, "cursor": .lastWriterWins],
        cursor: .start, pendingOperations: 0, conflicts: 0)

    private func plan(
        space: String? = nil, collections: [String]? = nil, policy: SyncConflictPolicy = .report,
        status: SyncStatus? = status
    ) throws(ToolError) -> SyncCommand.Request {
        try SyncCommand.plan(
            conninfo: "host=db", space: space, collections: collections, policy: policy, status: status,
            storePath: "s.sqlite")
    }

    @Test func `a first sync starts the named collections with the given space and policy`() throws {
        let request = try plan(space: "bob", collections: ["a", "b"], policy: .lastWriterWins, status: nil)
        #expect(request == SyncCommand.Request(conninfo: "host=db", space: "bob", newCollections: ["a", "b"], policy: .lastWriterWins))
    }

    @Test func `a first sync without a space or collections is refused, naming what is missing`() {
        for (space, collections, missing) in [
            ("s", nil, "--collections a,b"), (nil, ["a"], "--space SPACE"), (nil, nil, "--space SPACE and --collections a,b"),
        ] as [(String?, [String]?, String)] {
            let error = #expect(throws: ToolError.self) { try plan(space: space, collections: collections, status: nil) }
            #expect(error?.exitCode == .dataError)
            #expect(error?.message.contains("its first sync needs \(missing)") == true, "\(error?.message ?? "")")
        }
    }

    @Test func `a later sync keeps the stored space and starts nothing unless asked`() throws {
        #expect(try plan() == SyncCommand.Request(conninfo: "host=db", space: "alice", policy: .report))
        #expect(try plan(space: "alice").toStart.isEmpty)
        #expect(try plan(collections: ["notes"]).toStart.isEmpty, "already syncing with that policy")
    }

    @Test func `a later sync adds new collections and changes only the policies that differ`() throws {
        let request = try plan(collections: ["notes", "cursor", "new"], policy: .lastWriterWins)
        #expect(request.newCollections == ["new"])
        #expect(request.changedPolicy == ["notes"])
        let back = try plan(collections: ["cursor"])
        #expect(back.changedPolicy == ["cursor"] && back.policy == .report)
    }

    @Test func `another space, or last writer wins without collections, is refused`() {
        let other = #expect(throws: ToolError.self) { try plan(space: "bob") }
        #expect(other?.exitCode == .dataError)
        #expect(other?.message.contains(#"syncs space "alice", not "bob""#) == true)
        let lww = #expect(throws: ToolError.self) { try plan(policy: .lastWriterWins) }
        #expect(lww?.exitCode == .dataError)
    }

    @Test func `collection lists must not hold empty or repeated names`() throws {
        #expect(try SyncCommand.parseCollections(nil) == nil)
        #expect(try SyncCommand.parseCollections("a, b") == ["a", "b"])
        #expect(throws: ToolError.self) { try SyncCommand.parseCollections("a,,b") }
        #expect(throws: ToolError.self) { try SyncCommand.parseCollections("") }
        #expect(throws: ToolError.self) { try SyncCommand.parseCollections("a,a") }
    }

    @Test func `server failures map to exit codes that say what happened to local data`() {
        let unreachable = ToolError(SyncError(.unreachable, "refused"), pending: 3, touched: false)
        #expect(unreachable.exitCode == .storeRefused)
        #expect(unreachable.message.contains("local data untouched; 3 local operation(s) stay pending"))
        let broken = ToolError(SyncError(.unreachable, "cut"), pending: nil, touched: true)
        #expect(broken.message.contains("nothing local was lost"))
        let refusedBefore = ToolError(SyncError(.invalidRequest, "x"), pending: nil, touched: false)
        #expect(refusedBefore.exitCode == .dataError)
        #expect(refusedBefore.message.contains("nothing was changed"))
        // Refused once the sync had begun: the store is not as it was, so no "nothing changed".
        let refusedDuring = ToolError(SyncError(.invalidRequest, "x"), pending: 1, touched: true)
        #expect(refusedDuring.exitCode == .dataError)
        #expect(!refusedDuring.message.contains("nothing was changed"))
        #expect(refusedDuring.message.contains("1 local operation(s) stay pending"))
        let failed = ToolError(SyncError(.serverFailure, "x"), pending: 2, touched: true)
        #expect(failed.exitCode == .storeRefused)
        #expect(failed.message.contains("2 local operation(s) stay pending"))
        #expect(!failed.message.contains("nothing local was lost"), "a server failure may have replaced server data")
        // Settings and credentials are not fixed by waiting: never 69, never "try later".
        let settings = ToolError(SyncError(.configuration, "database does not exist"), pending: nil, touched: false)
        #expect(settings.exitCode.rawValue == 78)
        #expect(settings.message.contains("trying again does not help"))
        let credentials = ToolError(SyncError(.authentication, "password"), pending: nil, touched: false)
        #expect(credentials.exitCode.rawValue == 77)
        #expect(!credentials.message.contains("later"))
        // TLS the machine cannot use (an untrusted certificate; on Linux libcurl's words under
        // URLError.unknown) is a setting too; other unknown failures stay "try later".
        let tls = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"])
        let untrusted = ToolError(SyncError(.unreachable, "x", underlying: tls), pending: nil, touched: false)
        #expect(untrusted.exitCode.rawValue == 78)
        #expect(untrusted.message.contains("trying again does not help"))
        // A handshake cut short (a relay restarting) may pass later: still "try later".
        let cut = URLError(.unknown, userInfo: [
            NSLocalizedDescriptionKey: "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to relay:443",
        ])
        #expect(ToolError(SyncError(.unreachable, "x", underlying: cut), pending: nil, touched: false).exitCode == .storeRefused)
        let other = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "something else"])
        #expect(ToolError(SyncError(.unreachable, "x", underlying: other), pending: nil, touched: false).exitCode == .storeRefused)
        let forked = ToolError(SyncError(.forkedDevice, "refused"), pending: 1, touched: true)
        #expect(forked.exitCode == .dataError)
        #expect(forked.message.contains("recordkeeper sync --recover"))
    }
}
