import CSQLite
import Testing
@testable import RecordKeeper

/// Named SQLite result codes: a primary name matches its extended codes, an extended name
/// only itself, in a `switch` and through `matches(_:)` alike.
@Suite struct ResultCodeTests {
    /// `SQLITE_READONLY_DIRECTORY`, `SQLITE_BUSY_SNAPSHOT`, `SQLITE_CONSTRAINT_CHECK`: macros
    /// Swift does not import.
    let readOnlyDirectory = ResultCode(rawValue: SQLITE_READONLY | (6 << 8))
    let busySnapshot = ResultCode(rawValue: SQLITE_BUSY | (2 << 8))
    let constraintCheck = ResultCode(rawValue: SQLITE_CONSTRAINT | (1 << 8))

    @Test func `a primary name matches its extended codes and no other primary code`() {
        #expect(readOnlyDirectory.matches(.readOnly))
        #expect(busySnapshot.matches(.busy))
        #expect(ResultCode.readOnly.matches(.readOnly))
        #expect(!readOnlyDirectory.matches(.cannotOpen))
        #expect(!busySnapshot.matches(.locked))
    }

    @Test func `an extended name matches only itself, not its primary code or a sibling`() {
        #expect(ResultCode.constraintUnique.matches(.constraintUnique))
        #expect(ResultCode.constraintUnique.matches(.constraint))
        #expect(!ResultCode.constraint.matches(.constraintUnique))
        #expect(!constraintCheck.matches(.constraintUnique))
    }

    @Test func `a switch takes the first name that matches`() {
        func name(_ code: ResultCode) -> String {
            switch code {
            case .constraintUnique: "unique"
            case .busy, .locked: "busy"
            case .readOnly: "read-only"
            default: "other"
            }
        }
        #expect(name(readOnlyDirectory) == "read-only")
        #expect(name(busySnapshot) == "busy")
        #expect(name(.constraintUnique) == "unique")
        #expect(name(constraintCheck) == "other")
    }

    @Test func `a failure keeps the extended code SQLite reported`() {
        let failure = SQLiteFailure(code: readOnlyDirectory.rawValue, message: "attempt to write a readonly database")
        #expect(failure.code == readOnlyDirectory)
        #expect(failure.code.primary == .readOnly)
        #expect(!failure.isBusy)
        #expect(SQLiteFailure(code: busySnapshot.rawValue, message: "").isBusy)
    }
}
