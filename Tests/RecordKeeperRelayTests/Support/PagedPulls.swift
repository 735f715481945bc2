import Foundation
import RecordKeeper

/// Fills space "alice" with 25 records in 5 commits: pages of 4 are cut inside commits.
func fillAlice(_ server: any RecordSyncServer) async throws {
    for commit in 0..<5 {
        let values = Dictionary(uniqueKeysWithValues: (0..<5).map { ("key-\(commit)-\($0)", "v\(commit)") })
        _ = try await server.push(space: "alice", operations: [.writing(values, sequence: Int64(commit + 1))])
    }
}

/// Every page of space "alice" from the start, pulled one after the other.
func sequentialPages(_ server: any RecordSyncServer, limit: Int) async throws -> [SyncPage] {
    var pages: [SyncPage] = []
    var cursor = SyncCursor.start
    while true {
        let page = try await server.pull(space: "alice", after: cursor, limit: limit)
        pages.append(page)
        cursor = page.cursor
        if !page.hasMore { return pages }
    }
}
