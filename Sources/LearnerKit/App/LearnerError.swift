import Foundation
import RecordKeeper

/// A failure `learner` reports as one message on stderr and a non-zero exit code.
struct LearnerError: Error {
    /// Exit codes from BSD `sysexits.h`, as the `recordkeeper` tool uses them.
    enum Code: Int32 {
        case usage = 64
        case dataError = 65
        case notFound = 66
        case storeRefused = 69
        case internalError = 70
        case ioError = 74
        case conflict = 75
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The exit code for a failure of the store or the repository.
    static func exitCode(for error: any Error) -> Code {
        switch error {
        case let error as LearnerError: return error.code
        case let error as RecordStoreError:
            switch error.code {
            case .invalidCollectionName, .invalidKey, .invalidArgument, .tooBig: return .dataError
            case .notADatabase, .foreignDatabase, .newerFormat, .corruptStore, .malformedRecord: return .storeRefused
            case .cannotOpen, .readOnly, .storageFull, .ioError: return .ioError
            case .busy: return .conflict
            default: return .internalError
            }
        case is RecordConflict: return .conflict
        case is RepositoryError: return .dataError
        default: return .internalError
        }
    }

    /// A person-readable description with the suggestion of what to do, if there is one.
    static func describe(_ error: any Error) -> String {
        if let error = error as? LearnerError { return error.message }
        var text = (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
        // The library's suggestion for a conflict speaks to code (load, merge, save); a person
        // runs the command again, which loads what the other process saved.
        if error is RecordConflict { return text + " Run the command again." }
        if let suggestion = (error as? any LocalizedError)?.recoverySuggestion {
            text += " " + suggestion
        }
        return text
    }
}

extension LearnerError: LocalizedError {
    var errorDescription: String? { message }
}
