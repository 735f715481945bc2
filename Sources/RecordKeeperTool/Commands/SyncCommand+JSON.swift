import Foundation
import RecordKeeper

/// `sync --json`: what one sync did, as one JSON document on standard output (docs/CLI.md
/// "sync --json" is the contract; fields may be added, never renamed or removed):
///
/// ```json
/// {"space":"alice","device":"6F1C…","started":["notes"],"policyChanged":[],"policy":"report",
///  "recovery":null,"pushed":{"operations":2,"changes":3},
///  "pulled":{"changes":5,"resynced":false,"removedAsCompacted":0},
///  "conflicts":{"new":[{"collection":"notes","key":"today","serverVersion":7,
///                       "local":{"value":"mine"},"server":{"value":"theirs"}}],"unresolved":1},
///  "pending":0,"cursor":{"counter":9,"position":null}}
/// ```
///
/// `recovery` is null, or `{"reason":"requested"|"copied"|"unbound","device","previousDevice",
/// "reissuedOperations"}` when the store took a new device id; `policy` is the policy of the
/// collections in `started` and `policyChanged`; each new conflict is an object of `conflicts
/// --json`; `cursor.position` is null or `{"collection","key"}`. A sync that fails prints no
/// JSON: the exit code and the message on standard error say why, as without `--json`.
extension SyncCommand {
    static func json(
        report: SyncReport, request: Request, status: SyncStatus?, recovery: SyncRecovery?
    ) -> [UInt8] {
        var out = Array(#"{"space":"#.utf8) + JSONText.quoted(request.space)
        out += Array(#","device":"#.utf8) + (status.map { JSONText.quoted($0.device) } ?? Array("null".utf8))
        out += Array(#","started":"#.utf8) + strings(request.newCollections)
        out += Array(#","policyChanged":"#.utf8) + strings(request.changedPolicy)
        out += Array(#","policy":"#.utf8) + JSONText.quoted(request.policy.rawValue)
        out += Array(#","recovery":"#.utf8) + (recovery.map(object) ?? Array("null".utf8))
        out += Array(#","pushed":{"operations":"#.utf8) + number(report.pushedOperations)
        out += Array(#","changes":"#.utf8) + number(report.pushedChanges) + Array("}".utf8)
        out += Array(#","pulled":{"changes":"#.utf8) + number(report.pulledChanges)
        out += Array(#","resynced":"#.utf8) + Array((report.resynced ? "true" : "false").utf8)
        out += Array(#","removedAsCompacted":"#.utf8) + number(report.removedAsCompacted) + Array("}".utf8)
        out += Array(#","conflicts":{"new":["#.utf8)
        for (index, conflict) in report.newConflicts.enumerated() {
            if index > 0 { out += Array(",".utf8) }
            out += ConflictCommands.object(conflict)
        }
        out += Array(#"],"unresolved":"#.utf8) + number(status?.conflicts ?? 0) + Array("}".utf8)
        out += Array(#","pending":"#.utf8) + number(status?.pendingOperations ?? 0)
        out += Array(#","cursor":{"counter":"#.utf8) + Array(String(report.cursor.counter).utf8)
        out += Array(#","position":"#.utf8)
        if let position = report.cursor.position {
            out += Array(#"{"collection":"#.utf8) + JSONText.quoted(position.collection)
            out += Array(#","key":"#.utf8) + JSONText.quoted(position.key) + Array("}".utf8)
        } else {
            out += Array("null".utf8)
        }
        out += Array("}}\n".utf8)
        return out
    }

    private static func object(_ recovery: SyncRecovery) -> [UInt8] {
        var out = Array(#"{"reason":"#.utf8) + JSONText.quoted(recovery.reason.rawValue)
        out += Array(#","device":"#.utf8) + JSONText.quoted(recovery.device)
        out += Array(#","previousDevice":"#.utf8)
            + (recovery.previousDevice.map { JSONText.quoted($0) } ?? Array("null".utf8))
        out += Array(#","reissuedOperations":"#.utf8) + number(recovery.reissuedOperations) + Array("}".utf8)
        return out
    }

    private static func strings(_ names: [String]) -> [UInt8] {
        Array("[".utf8) + Array(names.map { JSONText.quoted($0) }.joined(separator: Array(",".utf8))) + Array("]".utf8)
    }

    private static func number(_ value: Int) -> [UInt8] { Array(String(value).utf8) }
}
